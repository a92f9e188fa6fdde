'use strict'

/**
 * A plain options object and a URL's query string: the fields read, the
 * ones refused (a topology named in a form we cannot read), the timeouts.
 */

const { URL_SCHEME, invalidClient, text, int, tlsFields } = require('./fields')

const OPTION_FIELDS = ['url', 'host', 'port', 'path', 'db', 'database', 'username', 'password', 'tls',
  'connectTimeout', 'commandTimeout', 'keyPrefix', 'prefix']

/** Options-object fields that name a topology in a form we cannot read (each message says which form to give). */
const UNSUPPORTED_FIELDS = {
  sentinelRootNodes: 'node-redis Sentinel (sentinelRootNodes: give { sentinels: [host:port, ...], name })',
  rootNodes: 'Redis Cluster (rootNodes: give { cluster: [url, ...] } or the cluster client)',
  nodes: 'Redis Cluster (nodes: give { cluster: [url, ...] })',
  socket: 'node-redis socket options (give host, port or path at the top level)'
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

/** A plain `{host, port, path, db, username, password, tls}` (or `url`) object. */
function fromOptions (value) {
  for (const field of Object.keys(UNSUPPORTED_FIELDS)) {
    if (value[field] !== undefined) {
      throw invalidClient(value, `an options object for ${UNSUPPORTED_FIELDS[field]}, which redislock-rs does not support yet`)
    }
  }
  const has = OPTION_FIELDS.some((f) => value[f] !== undefined)
  if (!has) throw invalidClient(value, `an object with none of the fields ${OPTION_FIELDS.join(', ')}`)
  if (value.url !== undefined && !URL_SCHEME.test(String(value.url))) {
    throw invalidClient(value, 'an options object whose url is not a redis://, rediss:// or unix:// URL')
  }
  if (value.keyPrefix !== undefined && value.prefix !== undefined && value.keyPrefix !== value.prefix) {
    throw invalidClient(value, 'an options object with both keyPrefix and prefix')
  }
  for (const field of ['url', 'host', 'path']) {
    // An empty or null address would silently mean 127.0.0.1:6379.
    if (value[field] !== undefined && text(value[field]) === undefined) {
      throw invalidClient(value, `an options object with an empty ${field}`)
    }
  }
  const out = {
    url: text(value.url),
    host: text(value.host),
    port: int(value.port),
    path: text(value.path),
    db: int(value.db !== undefined ? value.db : value.database),
    username: text(value.username),
    password: text(value.password),
    connectTimeout: int(value.connectTimeout),
    commandTimeout: int(value.commandTimeout)
  }
  urlTimeouts(out.url, out)
  return tlsFields(value.tls, out)
}

module.exports = { fromOptions, urlTimeouts }
