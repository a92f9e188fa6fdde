'use strict'

/**
 * rediss:// and TLS options against a real TLS-only redis-server, with a
 * throwaway CA and server certificate made by `openssl` for this run.
 * Verification is on by default; trust is given explicitly.
 */

const { describe, test, before, after } = require('node:test')
const assert = require('node:assert')
const fs = require('fs')
const os = require('os')
const path = require('path')
const Redis = require('ioredis')
const { startRedis, freePort } = require('./helpers/redis')
const { makeCertificates } = require('./helpers/tls')
const redislock = require('..')
const { LockAcquisitionError } = redislock

describe('TLS (rediss://)', () => {
  let dir, certs, srv, tlsPort, raw
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-tls-'))
    certs = makeCertificates(dir)
    tlsPort = await freePort()
    srv = await startRedis({
      waitPort: tlsPort,
      args: ['--port', '0', '--tls-port', String(tlsPort), '--bind', '127.0.0.1', '127.0.0.2',
        '--tls-cert-file', path.join(dir, 'server.crt'), '--tls-key-file', path.join(dir, 'server.key'),
        '--tls-ca-cert-file', path.join(dir, 'ca.crt'), '--tls-auth-clients', 'no']
    })
    raw = new Redis({ host: '127.0.0.1', port: tlsPort, tls: { ca: certs.ca }, maxRetriesPerRequest: 1 })
    await raw.ping()
  })
  after(async () => {
    if (raw) raw.disconnect()
    if (srv) await srv.stop()
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  async function roundTrip (client, key) {
    const lock = redislock.createLock(client, { timeout: 10000 })
    await lock.acquire(key)
    assert.strictEqual(await raw.get(key), lock._id, 'the lock is in the TLS server')
    await lock.extend(20000)
    await lock.release()
    assert.strictEqual(await raw.exists(key), 0)
  }

  async function refused (client, pattern) {
    const lock = redislock.createLock(client)
    const err = await lock.acquire('tls:refused').then(() => null, (e) => e)
    assert.ok(err instanceof LockAcquisitionError, `expected LockAcquisitionError, got ${err && err.name}`)
    assert.strictEqual(err.cause.code, 'ERR_REDIS_CONNECTION')
    if (pattern) assert.match(err.message, pattern)
    assert.strictEqual(lock._locked, false)
    return err
  }

  test('verification is on by default: an untrusted certificate is refused', async () => {
    const err = await refused(`rediss://127.0.0.1:${tlsPort}`, /certificate|Unknown ?Issuer|invalid peer/i)
    console.log(`# untrusted: ${err.message}`)
    await refused({ host: '127.0.0.1', port: tlsPort, tls: true })
    await refused({ url: `rediss://127.0.0.1:${tlsPort}`, tls: { ca: certs.other } }) // wrong CA
    // The right CA, but the certificate does not name 127.0.0.2.
    await refused({ host: '127.0.0.2', port: tlsPort, tls: { ca: certs.ca } }, /certificate|name|NotValidForName/i)
    // Plain text to a TLS port fails too (and does not hang).
    await refused({ host: '127.0.0.1', port: tlsPort, connectTimeout: 500, commandTimeout: 500 })
  })

  test('trust via the options object tls: {ca} (IP and DNS name)', async () => {
    await roundTrip({ host: '127.0.0.1', port: tlsPort, tls: { ca: certs.ca } }, 'tls:opts')
    await roundTrip({ host: 'localhost', port: tlsPort, tls: { ca: Buffer.from(certs.ca) } }, 'tls:dns')
    await roundTrip({ host: '127.0.0.1', port: tlsPort, tls: { ca: [certs.other, certs.ca] } }, 'tls:bundle')
  })

  test('trust via a rediss:// URL plus tls: {ca}', async () => {
    await roundTrip({ url: `rediss://127.0.0.1:${tlsPort}/0`, tls: { ca: certs.ca } }, 'tls:url')
    await roundTrip({ url: `rediss://localhost:${tlsPort}`, tls: { ca: certs.ca } }, 'tls:url-dns')
  })

  test('rejectUnauthorized: false is an explicit opt-out', async () => {
    await roundTrip({ host: '127.0.0.1', port: tlsPort, tls: { rejectUnauthorized: false } }, 'tls:insecure')
  })

  test('an ioredis client with TLS settings carries them over', async () => {
    await roundTrip(raw, 'tls:ioredis')
    const untrusted = new Redis({ host: '127.0.0.1', port: tlsPort, tls: {}, lazyConnect: true })
    await refused(untrusted)
  })

  test('node-redis v4 and v6 clients with TLS settings carry them over', async () => {
    for (const name of ['redis4', 'redis']) {
      const { createClient } = require(name)
      const client = createClient({ socket: { host: '127.0.0.1', port: tlsPort, tls: true, ca: certs.ca } })
      await roundTrip(client, `tls:${name}`)
      const viaUrl = createClient({ url: `rediss://localhost:${tlsPort}`, socket: { tls: true, ca: certs.ca } })
      await roundTrip(viaUrl, `tls:${name}:url`)
      await refused(createClient({ socket: { host: '127.0.0.1', port: tlsPort, tls: true } }))
    }
  })

  test('a node_redis v3 client with TLS settings carries them over', async () => {
    const redis3 = require('redis3')
    const client = redis3.createClient({ host: '127.0.0.1', port: tlsPort, tls: { ca: certs.ca } })
    client.on('error', () => {})
    try {
      await roundTrip(client, 'tls:redis3')
    } finally {
      client.quit()
    }
  })

  test('TLS runs on the engine this run selected (JS-thread: no thread of ours)', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
    const fs = require('fs')
    const ours = fs.readdirSync('/proc/self/task')
      .map((t) => { try { return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() } catch (_) { return '' } })
      .filter((name) => name === 'redislock-rs')
    const engine = require('../lib/native/bridge').defaultEngine()
    assert.deepStrictEqual(ours, engine === 'js' ? [] : ['redislock-rs'], `engine ${engine}`)
  })
})
