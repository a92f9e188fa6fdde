'use strict'

const { invalidClient, text, int, tlsFields, keyPrefix, seed, classNames } = require('./fields')

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

module.exports = { fromCluster }
