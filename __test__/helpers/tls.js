'use strict'

/**
 * A throwaway CA and a server certificate for 127.0.0.1 / localhost, made
 * by `openssl` in `dir` for one test run (ca.crt, server.crt, server.key;
 * the server certificate also serves as a client one: cluster nodes present
 * it to each other on the cluster bus),
 * and a second, unrelated CA (other.crt) that must not be enough.
 */

const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')

function makeCertificates (dir) {
  const run = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=redislock-rs test CA')
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  fs.writeFileSync(path.join(dir, 'ext.cnf'),
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' +
    'keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n')
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'server.crt', '-days', '1', '-extfile', 'ext.cnf')
  // A second, unrelated CA: trusting it must not be enough.
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other.key', '-out', 'other.crt', '-days', '1', '-subj', '/CN=unrelated CA')
  return {
    ca: fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8'),
    other: fs.readFileSync(path.join(dir, 'other.crt'), 'utf8')
  }
}

/** redis-server arguments for TLS only on `port` with the certificates of `dir`. */
function tlsServerArgs (dir, port) {
  return ['--port', '0', '--tls-port', String(port),
    '--tls-cert-file', path.join(dir, 'server.crt'), '--tls-key-file', path.join(dir, 'server.key'),
    '--tls-ca-cert-file', path.join(dir, 'ca.crt'), '--tls-auth-clients', 'no']
}

module.exports = { makeCertificates, tlsServerArgs }
