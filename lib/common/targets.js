'use strict'

/**
 * Where a lock's operations go: the engine, the endpoint's id (see
 * src/node/mod.rs) and the client's key prefix, read once per client object
 * or URL. Shared by both faces.
 */

const { RedisConnection } = require('../native/loader')
const { engineFor, tokioEngineFor } = require('../native/bridge')
const { readClient, CLIENT_KINDS } = require('./clients')
const { isRelayed, relayOf } = require('./relay')

/**
 * `{ engine, endpoint, prefix }` (the engine, the endpoint's id and the key
 * prefix) for client objects and URL strings we have seen.
 */
const byClient = new WeakMap()
const byUrl = new Map()
// The same, on another database than the client's (`db`), by database.
const byClientDb = new WeakMap()
const byUrlDb = new Map()

/**
 * The target of `client` (`what` names the caller in errors); with `db`,
 * of the same server on that database (node-redlock's `db` setting).
 */
function targetFor (client, what = 'createLock', db) {
  const cache = cacheFor(client, db)
  let target = cache ? cache.get(client) : undefined
  if (target === undefined && isRelayed(client)) {
    // No server of ours to reach: commands through the client itself (its
    // own key prefix applies there), on the tokio engine.
    if (db !== undefined) throw new TypeError(`${what}: a client that commands go through cannot be moved to another database`)
    const native = new RedisConnection({ relay: relayOf(client) })
    target = { engine: tokioEngineFor(), endpoint: native.id, prefix: '', cluster: false }
    if (cache) cache.set(client, target)
  }
  if (target === undefined) {
    const { options, prefix } = readClient(client)
    if (db !== undefined) {
      if (options.cluster !== undefined) throw new TypeError(`${what}: a Redis Cluster has no databases, so a db cannot be chosen`)
      options.db = db
    }
    let native
    try {
      native = new RedisConnection(options)
    } catch (err) {
      const why = String(err && err.message)
      throw new TypeError(`${what} expects ${CLIENT_KINDS}; got unusable settings: ${why}`, { cause: err })
    }
    // The JS-thread engine speaks to one server; a Redis Cluster is the
    // redis crate's cluster client, on the tokio engine.
    // ... and Sentinel's primary is found (again after a failover) there too.
    const cluster = options.cluster !== undefined
    const sentinel = options.sentinels !== undefined
    target = { engine: cluster || sentinel ? tokioEngineFor() : engineFor(), endpoint: native.id, prefix, cluster }
    if (cache) cache.set(client, target)
  }
  return target
}

/** Where targets of `client` on `db` (undefined: the client's own) are kept; null: not kept. */
function cacheFor (client, db) {
  const isObject = client !== null && typeof client === 'object'
  if (typeof client !== 'string' && !isObject) return null
  if (db === undefined) return isObject ? byClient : byUrl
  const outer = isObject ? byClientDb : byUrlDb
  let inner = outer.get(client)
  if (inner === undefined) {
    inner = new Map()
    outer.set(client, inner)
  }
  // One Map per client, keyed by db: a tiny adapter with get/set by client.
  return { get: () => inner.get(db), set: (_, t) => inner.set(db, t) }
}

module.exports = { targetFor }
