'use strict'

/**
 * Reads connection settings off whatever the user hands `createLock`: a
 * node_redis v3 client, a node_redis v4+ client, an ioredis (or iovalkey)
 * client, a Valkey GLIDE client (GlideClient, GlideClusterClient), a
 * `redis://` / `rediss://` / `unix://` URL, or a plain options object. The
 * result is the plain `ConnectOptions` object the native `RedisConnection`
 * takes, plus the key prefix the client puts in front of every key it sends.
 *
 * Anything that cannot be read exactly (a custom ioredis connector, a
 * Sentinel client of a kind we cannot read, a client whose settings are
 * hidden) is refused, never guessed:
 * a guess would lock on a different server than the user's other code.
 */

const { CLIENT_KINDS, URL_SCHEME, invalidClient, keyPrefix, classNames } = require('./fields')
const { fromNodeRedis3 } = require('./node-redis3')
const { fromNodeRedis4 } = require('./node-redis')
const { fromIORedis } = require('./ioredis')
const { fromOptions, urlTimeouts } = require('./options')
const { fromCluster } = require('./cluster')
const { fromSentinel, isNodeRedisSentinel } = require('./sentinel')
const { isGlide, fromGlide } = require('./glide')

function checkNumbers (out, value) {
  for (const field of ['port', 'db', 'connectTimeout', 'commandTimeout']) {
    const n = out[field]
    if (n === undefined) continue
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
      throw invalidClient(value, `an invalid ${field} (${String(n)})`)
    }
  }
  return out
}

/**
 * Why `client` cannot be read exactly (a Sentinel client of a kind we
 * cannot read, a custom connector), or null. ioredis builds Sentinel clients from the same
 * `Redis` class, so its options tell, not its class.
 */
function unsupportedTopology (client) {
  const names = classNames(client)
  if (names.some((n) => /Sentinel/.test(n)) && !isNodeRedisSentinel(client)) return 'a node-redis Sentinel client of a kind we cannot read (give { sentinels: [host:port, ...], name, password })'
  const opts = client.options
  const sentinel = opts !== null && typeof opts === 'object' && opts.sentinels !== undefined && opts.sentinels !== null
  if (opts !== null && typeof opts === 'object') {
    if (typeof opts.Connector === 'function') return 'an ioredis client with a custom Connector'
  }
  const connector = client.connector
  if (!sentinel && connector && connector.constructor && connector.constructor.name !== 'StandaloneConnector' &&
    typeof client.defineCommand === 'function') {
    return `an ioredis client with a ${connector.constructor.name}`
  }
  return null
}

/**
 * `{ options, prefix }` for `value`: the `ConnectOptions` and the key prefix
 * its client applies, or a TypeError saying what a client may be.
 */
function readClient (value) {
  try {
    return readTarget(value)
  } catch (err) {
    if (err instanceof TypeError) throw err
    // A getter or proxy on the user's object threw: still a bad client.
    throw new TypeError(`createLock expects ${CLIENT_KINDS}; reading the client's settings threw: ${
      safeMessage(err)}`, { cause: err })
  }
}

function safeMessage (err) {
  try {
    return err && typeof err.message === 'string' ? err.message : typeof err
  } catch (_) {
    return 'an exception'
  }
}

function readTarget (value) {
  let out
  let prefix = ''
  // Valkey GLIDE first: its options are neither node-redis's nor ioredis's.
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && isGlide(value)) {
    out = fromGlide(value)
    for (const key of Object.keys(out)) {
      if (out[key] === undefined) delete out[key]
    }
    return { options: checkNumbers(out, value), prefix }
  }
  const topology = value !== null && typeof value === 'object' && !Array.isArray(value)
    ? unsupportedTopology(value)
    : null
  const plainObject = topology === null && value !== null && typeof value === 'object' && !Array.isArray(value)
  const cluster = plainObject ? fromCluster(value) : null
  const sentinel = plainObject && cluster === null ? fromSentinel(value) : null
  if (cluster !== null) {
    out = cluster.out
    prefix = cluster.prefix
  } else if (sentinel !== null) {
    out = sentinel.out
    prefix = sentinel.prefix
  } else if (typeof value === 'string') {
    if (!URL_SCHEME.test(value)) throw invalidClient(value)
    out = urlTimeouts(value, { url: value })
  } else if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidClient(value)
  } else if (topology !== null) {
    throw invalidClient(value, `${topology}, which redislock-rs does not support yet`)
  } else if (value.connection_options !== undefined && typeof value.send_command === 'function') {
    out = fromNodeRedis3(value)
    prefix = keyPrefix(value.options && value.options.prefix, value)
  } else if (typeof value.sendCommand === 'function' && typeof value.defineCommand === 'function') {
    out = fromIORedis(value)
    prefix = keyPrefix(value.options && value.options.keyPrefix, value)
  } else if (typeof value.sendCommand === 'function' && value.options !== undefined) {
    out = fromNodeRedis4(value)
  } else if (typeof value.sendCommand === 'function' || typeof value.send_command === 'function') {
    throw invalidClient(value, 'a Redis client whose connection settings could not be read')
  } else {
    out = fromOptions(value)
    prefix = keyPrefix(value.keyPrefix !== undefined ? value.keyPrefix : value.prefix, value)
  }
  for (const key of Object.keys(out)) {
    if (out[key] === undefined) delete out[key]
  }
  return { options: checkNumbers(out, value), prefix }
}

module.exports = { readClient, CLIENT_KINDS }
