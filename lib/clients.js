'use strict'

/**
 * Reads connection settings off whatever the user hands `createLock`: a
 * node_redis v3 client, a node_redis v4+ client, an ioredis client, a
 * `redis://` / `rediss://` URL, or a plain options object. The result is the
 * plain `ConnectOptions` object the native `RedisConnection` takes.
 */

const CLIENT_KINDS =
  'a node_redis (v3 or v4+) client, an ioredis client, a redis:// or rediss:// URL, ' +
  'or an options object {host, port, db, username, password, tls}'

const OPTION_FIELDS = ['url', 'host', 'port', 'db', 'database', 'username', 'password', 'tls',
  'connectTimeout', 'commandTimeout']

function describe (value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') {
    const name = value.constructor && value.constructor.name
    return name && name !== 'Object' ? `a ${name} object` : 'an unrecognised object'
  }
  if (typeof value === 'string') return 'a string that is not a redis:// or rediss:// URL'
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

/** node_redis v3: `client.connection_options`, `client.options`, `selected_db`. */
function fromNodeRedis3 (client) {
  const opts = client.options || {}
  const conn = client.connection_options || {}
  const out = {
    host: text(conn.host || opts.host),
    port: int(conn.port || opts.port),
    db: int(client.selected_db !== undefined && client.selected_db !== null ? client.selected_db : opts.db),
    username: text(client.auth_user || opts.user || opts.username),
    password: text(client.auth_pass || opts.password || opts.auth_pass)
  }
  return tlsFields(opts.tls, out)
}

/** node_redis v4+: `client.options` with `url`, `socket`, `database`. */
function fromNodeRedis4 (client) {
  const opts = client.options || {}
  const socket = opts.socket || {}
  const out = {
    url: text(opts.url),
    host: text(socket.host),
    port: int(socket.port),
    db: int(opts.database),
    username: text(opts.username),
    password: text(opts.password)
  }
  if (socket.tls) {
    tlsFields(socket.tls === true ? { ...socket } : socket.tls, out)
  }
  return out
}

/** ioredis: `client.options`; the database currently selected wins. */
function fromIORedis (client) {
  const opts = client.options || {}
  const selected = client.condition && client.condition.select
  const out = {
    host: text(opts.host),
    port: int(opts.port),
    db: int(selected !== undefined && selected !== null ? selected : opts.db),
    username: text(opts.username),
    password: text(opts.password)
  }
  return tlsFields(opts.tls, out)
}

const URL_TIMEOUTS = /[?&](connectTimeout|commandTimeout)=([^&#]*)/g

/**
 * `connectTimeout` / `commandTimeout` from a URL's query string
 * (`redis://h:6379?commandTimeout=500`), into `out` unless already set there.
 */
function urlTimeouts (url, out) {
  if (typeof url !== 'string') return out
  for (const [, name, value] of url.matchAll(URL_TIMEOUTS)) {
    let text = value
    try { text = decodeURIComponent(value) } catch (_) {}
    if (out[name] === undefined) out[name] = int(text)
  }
  return out
}

/** A plain `{host, port, db, username, password, tls}` (or `url`) object. */
function fromOptions (value) {
  const has = OPTION_FIELDS.some((f) => value[f] !== undefined)
  if (!has) throw invalidClient(value, `an object with none of the fields ${OPTION_FIELDS.join(', ')}`)
  if (value.url !== undefined && !/^rediss?:\/\//.test(String(value.url))) {
    throw invalidClient(value, 'an options object whose url is not a redis:// or rediss:// URL')
  }
  const out = {
    url: text(value.url),
    host: text(value.host),
    port: int(value.port),
    db: int(value.db !== undefined ? value.db : value.database),
    username: text(value.username),
    password: text(value.password),
    connectTimeout: int(value.connectTimeout),
    commandTimeout: int(value.commandTimeout)
  }
  urlTimeouts(out.url, out)
  return tlsFields(value.tls, out)
}

function isClusterClient (client) {
  return client.isCluster === true || typeof client.getSlotMaster === 'function' ||
    (client.constructor && /Cluster|Sentinel/.test(client.constructor.name))
}

/**
 * The `ConnectOptions` for `value`, or a TypeError saying what a client may be.
 */
function connectOptionsFor (value) {
  try {
    return readConnectOptions(value)
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

function readConnectOptions (value) {
  let out
  if (typeof value === 'string') {
    if (!/^rediss?:\/\//.test(value)) throw invalidClient(value)
    out = urlTimeouts(value, { url: value })
  } else if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidClient(value)
  } else if (isClusterClient(value)) {
    throw invalidClient(value, 'a cluster or sentinel client, which redislock-rs does not support yet')
  } else if (value.connection_options !== undefined && typeof value.send_command === 'function') {
    out = fromNodeRedis3(value)
  } else if (typeof value.sendCommand === 'function' && typeof value.defineCommand === 'function') {
    out = fromIORedis(value)
  } else if (typeof value.sendCommand === 'function' && value.options !== undefined) {
    out = fromNodeRedis4(value)
  } else if (typeof value.sendCommand === 'function' || typeof value.send_command === 'function') {
    throw invalidClient(value, 'a Redis client whose connection settings could not be read')
  } else {
    out = fromOptions(value)
  }
  for (const key of Object.keys(out)) {
    if (out[key] === undefined) delete out[key]
  }
  return checkNumbers(out, value)
}

module.exports = { connectOptionsFor, CLIENT_KINDS }
