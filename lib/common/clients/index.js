'use strict'

/**
 * Reads connection settings off whatever the user hands `createLock`: a
 * node_redis v3 client, a node_redis v4+ client, an ioredis client, a
 * `redis://` / `rediss://` / `unix://` URL, or a plain options object. The
 * result is the plain `ConnectOptions` object the native `RedisConnection`
 * takes, plus the key prefix the client puts in front of every key it sends.
 *
 * Anything that cannot be read exactly (a custom ioredis connector, a
 * Sentinel client of a kind we cannot read, a client whose settings are
 * hidden) is refused, never guessed:
 * a guess would lock on a different server than the user's other code.
 */

const CLIENT_KINDS =
  'a node_redis (v3 or v4+) client, an ioredis client, a redis://, rediss:// or unix:// URL, ' +
  'or an options object {host, port, path, db, username, password, tls, keyPrefix} ' +
  '(a Redis Cluster: its ioredis or node-redis cluster client, or {cluster: [url, ...]})'

const OPTION_FIELDS = ['url', 'host', 'port', 'path', 'db', 'database', 'username', 'password', 'tls',
  'connectTimeout', 'commandTimeout', 'keyPrefix', 'prefix']

const URL_SCHEME = /^(rediss?|unix|redis\+unix):\/\//

/** Options-object fields that name a topology in a form we cannot read (each message says which form to give). */
const UNSUPPORTED_FIELDS = {
  sentinelRootNodes: 'node-redis Sentinel (sentinelRootNodes: give { sentinels: [host:port, ...], name })',
  rootNodes: 'Redis Cluster (rootNodes: give { cluster: [url, ...] } or the cluster client)',
  nodes: 'Redis Cluster (nodes: give { cluster: [url, ...] })',
  socket: 'node-redis socket options (give host, port or path at the top level)'
}

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

/** node_redis v3: `client.connection_options`, `client.options`, `selected_db`. */
function fromNodeRedis3 (client) {
  const opts = client.options || {}
  const conn = client.connection_options || {}
  const out = {
    ...address(conn.path || opts.path, conn.host || opts.host, conn.port || opts.port),
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
    ...address(socket.path, socket.host, socket.port),
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
    ...address(opts.path, opts.host, opts.port),
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

/** Class names along `value`'s prototype chain (node-redis wraps its classes). */
function classNames (value) {
  const names = []
  for (let o = value; o !== null && names.length < 16; o = Object.getPrototypeOf(o)) {
    const ctor = Object.prototype.hasOwnProperty.call(o, 'constructor') ? o.constructor : undefined
    if (typeof ctor === 'function' && typeof ctor.name === 'string') names.push(ctor.name)
  }
  return names
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

function clusterSeeds (nodes, what) {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new TypeError(`createLock could not read the Redis Cluster nodes of ${what}: expected a non-empty array`)
  }
  return nodes.map(seed)
}

/**
 * A Redis Cluster: `{ cluster: [url | host:port | {host, port}, ...], password, tls, keyPrefix, ... }`,
 * an ioredis `Cluster` (its startup nodes and `redisOptions`), or a
 * node-redis `createCluster()` client (its root nodes and `defaults`).
 * `null` when `value` is none of them.
 */
function fromCluster (value) {
  const names = classNames(value)
  let nodes, base, prefix
  if (Array.isArray(value.cluster)) {
    nodes = clusterSeeds(value.cluster, 'the cluster option')
    base = value
    prefix = value.keyPrefix !== undefined ? value.keyPrefix : value.prefix
  } else if (value.isCluster === true) {
    nodes = clusterSeeds(value.startupNodes, 'an ioredis Cluster')
    base = (value.options && value.options.redisOptions) || {}
    prefix = (value.options && value.options.keyPrefix) !== undefined ? value.options.keyPrefix : base.keyPrefix
  } else if (names.some((n) => /Cluster/.test(n)) || typeof value.getSlotMaster === 'function') {
    // node-redis keeps its cluster options private: the primaries it found
    // are public once connect() has run, and so are their node clients'
    // options (credentials, TLS, timeouts: its `defaults` for every node).
    const opts = value.options || undefined
    const roots = opts && opts.rootNodes
    const masters = Array.isArray(value.masters) && value.masters.length ? value.masters : undefined
    nodes = clusterSeeds(roots || masters, 'a node-redis cluster client (call connect() first)')
    const node = masters && masters[0].client && masters[0].client.options
    base = (opts && opts.defaults) || nodeDefaults(node)
    if (base.socket && typeof base.socket === 'object' && base.socket.tls) base = { ...base, tls: base.socket.tls === true ? true : base.socket }
  } else {
    return null
  }
  const out = {
    cluster: nodes,
    username: text(base.username),
    password: text(base.password),
    connectTimeout: int(base.connectTimeout),
    commandTimeout: int(base.commandTimeout)
  }
  if (base.db !== undefined && int(base.db) !== 0) throw invalidClient(value, 'a Redis Cluster with a database other than 0')
  return { out: tlsFields(base.tls, out), prefix: keyPrefix(prefix, value) }
}

/** A node-redis node client's options as cluster-wide defaults (its own address left out). */
function nodeDefaults (node) {
  if (node === null || typeof node !== 'object') return {}
  const { socket, url, ...rest } = node
  if (socket === null || typeof socket !== 'object') return rest
  const { host, port, path, ...shared } = socket
  const out = { ...rest, socket: shared }
  if (shared.connectTimeout !== undefined && rest.connectTimeout === undefined) out.connectTimeout = shared.connectTimeout
  return out
}

/**
 * Sentinel: `{ sentinels: [host:port | {host, port}, ...], name, sentinelPassword,
 * sentinelUsername, db, username, password, tls, keyPrefix }`, or an ioredis
 * client built with those options. `null` when `value` is neither.
 */
function fromSentinel (value) {
  if (isNodeRedisSentinel(value)) return fromNodeRedisSentinel(value)
  const isIORedis = typeof value.sendCommand === 'function' && typeof value.defineCommand === 'function'
  const o = isIORedis ? value.options : value
  if (o === null || typeof o !== 'object' || o.sentinels === undefined || o.sentinels === null) return null
  if (!Array.isArray(o.sentinels) || o.sentinels.length === 0) {
    throw invalidClient(value, 'Sentinel settings whose sentinels are not a non-empty array')
  }
  const name = text(o.name)
  if (name === undefined) throw invalidClient(value, 'Sentinel settings without the primary\'s name')
  const out = {
    sentinels: o.sentinels.map((n) => {
      const s = seed(n)
      return URL_SCHEME.test(s) ? s.replace(URL_SCHEME, '').replace(/^[^@]*@/, '').replace(/\/.*$/, '') : s
    }),
    sentinelName: name,
    sentinelUsername: text(o.sentinelUsername),
    sentinelPassword: text(o.sentinelPassword),
    db: int(o.db),
    username: text(o.username),
    password: text(o.password),
    connectTimeout: int(o.connectTimeout),
    commandTimeout: int(o.commandTimeout)
  }
  const withTls = tlsFields(o.tls, out)
  if (withTls.tlsCa !== undefined || withTls.tlsCert !== undefined || withTls.tlsKey !== undefined) {
    // The redis crate's Sentinel lookup takes a TLS mode but no certificates.
    throw invalidClient(value, 'Sentinel settings with a custom TLS CA or client certificate (not supported behind Sentinel: use tls: true with certificates the system trusts)')
  }
  return { out: withTls, prefix: keyPrefix(isIORedis ? o.keyPrefix : (o.keyPrefix !== undefined ? o.keyPrefix : o.prefix), value) }
}

/** A node-redis `createSentinel()` client (v5+): its nodes are public, its options are not. */
function isNodeRedisSentinel (value) {
  return typeof value.getSentinelNode === 'function' && typeof value.getMasterNode === 'function'
}

/**
 * A connected node-redis Sentinel client: the sentinel it talks to and the
 * primary it uses are public; the primary's name is then asked of the
 * sentinels natively (with every sentinel they know of). Its credentials,
 * TLS and database are private: a protected setup needs
 * `{ sentinels, name, password }`.
 */
function fromNodeRedisSentinel (value) {
  const sentinel = value.getSentinelNode()
  const primary = value.getMasterNode()
  const at = (n) => (n && typeof n.host === 'string' && Number.isInteger(n.port) ? `${n.host}:${n.port}` : null)
  if (at(sentinel) === null || at(primary) === null) {
    throw invalidClient(value, 'a node-redis Sentinel client that has not connected yet (call connect() first: its nodes are known only then)')
  }
  return { out: { sentinels: [at(sentinel)], sentinelPrimary: at(primary) }, prefix: '' }
}

function readTarget (value) {
  let out
  let prefix = ''
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
