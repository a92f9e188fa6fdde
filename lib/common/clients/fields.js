'use strict'

/**
 * What every client reader shares: what a client may be (CLIENT_KINDS, the
 * one refusal message, invalidClient) and how a field is read (text,
 * integers, TLS settings, an address, the key prefix, seed nodes, class
 * names).
 */

const CLIENT_KINDS =
  'a node_redis (v3 or v4+) client, an ioredis or iovalkey client, a Valkey GLIDE client, a redis://, rediss:// or unix:// URL, ' +
  'or an options object {host, port, path, db, username, password, tls, keyPrefix} ' +
  '(a Redis Cluster: its ioredis or node-redis cluster client, or {cluster: [url, ...]})'

const URL_SCHEME = /^(rediss?|unix|redis\+unix):\/\//

function describe (value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') {
    const name = value.constructor && value.constructor.name
    return name && name !== 'Object' ? `a ${name} object` : 'an unrecognised object'
  }
  if (typeof value === 'string') return 'a string that is not a redis://, rediss:// or unix:// URL'
  return `${typeof value} ${String(value)}`
}

function invalidClient (value, why) {
  return new TypeError(`createLock expects ${CLIENT_KINDS}; got ${why || describe(value)}`)
}

function text (value) {
  if (value === undefined || value === null || value === '') return undefined
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  if (Array.isArray(value)) return value.map(text).filter(Boolean).join('\n')
  return String(value)
}

function int (value) {
  if (value === undefined || value === null || value === '') return undefined
  const n = Number(value)
  return Number.isInteger(n) ? n : NaN
}

/** Node-style TLS settings (`true` or `{ca, cert, key, servername, rejectUnauthorized}`). */
function tlsFields (tls, out) {
  if (!tls) return out
  out.tls = true
  if (typeof tls === 'object') {
    out.tlsCa = text(tls.ca)
    out.tlsCert = text(tls.cert)
    out.tlsKey = text(tls.key)
    out.tlsServername = text(tls.servername)
    if (tls.rejectUnauthorized === false) out.tlsRejectUnauthorized = false
  }
  return out
}

/**
 * A Unix socket `path` wins over host/port, as in the clients themselves
 * (ioredis keeps its default host and port beside a path).
 */
function address (path, host, port) {
  if (path !== undefined && path !== null && path !== '') return { path: text(path) }
  return { host: text(host), port: int(port) }
}

/**
 * The prefix a client adds to every key it sends (node_redis v3 `prefix`,
 * ioredis `keyPrefix`), as a string; '' for none.
 */
function keyPrefix (prefix, value) {
  if (prefix === undefined || prefix === null || prefix === '') return ''
  if (Buffer.isBuffer(prefix)) {
    const str = prefix.toString('utf8')
    if (!Buffer.from(str, 'utf8').equals(prefix)) {
      throw invalidClient(value, 'a key prefix Buffer that is not valid UTF-8')
    }
    return str
  }
  if (typeof prefix !== 'string' && typeof prefix !== 'number') {
    throw invalidClient(value, `a key prefix of type ${typeof prefix}`)
  }
  // The clients concatenate (`prefix + key`), so a number prefix is its text.
  return String(prefix)
}

/** One cluster seed node as `host:port` or a URL. */
function seed (node) {
  if (typeof node === 'number') return `127.0.0.1:${node}`
  if (typeof node === 'string') return node
  if (node !== null && typeof node === 'object') {
    if (typeof node.url === 'string') return node.url
    const at = node.socket && typeof node.socket === 'object' ? node.socket : node
    if (at.host !== undefined || at.port !== undefined) return `${at.host || '127.0.0.1'}:${at.port || 6379}`
  }
  throw new TypeError(`a Redis Cluster node must be a URL, host:port, a port or { host, port }; got ${describe(node)}`)
}

/** Class names along `value`'s prototype chain (node-redis wraps its classes). */
function classNames (value) {
  const names = []
  for (let o = value; o !== null && names.length < 16; o = Object.getPrototypeOf(o)) {
    const ctor = Object.prototype.hasOwnProperty.call(o, 'constructor') ? o.constructor : undefined
    if (typeof ctor === 'function' && typeof ctor.name === 'string') names.push(ctor.name)
  }
  return names
}

module.exports = { CLIENT_KINDS, URL_SCHEME, describe, invalidClient, text, int, tlsFields, address, keyPrefix, seed, classNames }
