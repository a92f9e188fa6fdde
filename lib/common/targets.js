'use strict'

/**
 * Where a lock's operations go: the engine, the endpoint's id (see
 * src/node/mod.rs) and the client's key prefix, read once per client object
 * or URL. Shared by both faces.
 */

const { RedisConnection } = require('../native/loader')
const { engineFor, tokioEngineFor } = require('../native/bridge')
const { readClient, CLIENT_KINDS } = require('./clients')

/**
 * `{ engine, endpoint, prefix }` (the engine, the endpoint's id and the key
 * prefix) for client objects and URL strings we have seen.
 */
const byClient = new WeakMap()
const byUrl = new Map()

function targetFor (client, what = 'createLock') {
  const cache = typeof client === 'string' ? byUrl : (client !== null && typeof client === 'object' ? byClient : null)
  let target = cache ? cache.get(client) : undefined
  if (target === undefined) {
    const { options, prefix } = readClient(client)
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

module.exports = { targetFor }
