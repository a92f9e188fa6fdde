'use strict'

/**
 * The servers of a lock over several independent Redis servers (Redlock,
 * node-redlock): each client read once (lib/common/targets.js), one engine
 * for all of them, one key prefix.
 */

const { targetFor } = require('./targets')
const { tokioEngineFor } = require('../native/bridge')
const { endpointName } = require('../native/loader')

/**
 * `{ engine, endpoints (a Uint32Array), prefix, names, cluster }` for `clients` (an array
 * of what createLock takes), on database `db` if given (else each
 * client's own); `what` names the caller in errors. The
 * JS-thread engine runs them unless one needs the tokio engine (Redis
 * Cluster, Sentinel): then the tokio engine runs all of them.
 */
function serversFor (clients, what, db) {
  const targets = clients.map((c, i) => targetFor(c, `${what} server ${i}`, db))
  const prefixes = new Set(targets.map((t) => t.prefix))
  if (prefixes.size > 1) throw new TypeError(`${what}: every server's client must have the same key prefix`)
  const engines = new Set(targets.map((t) => t.engine))
  return {
    engine: engines.size === 1 ? targets[0].engine : tokioEngineFor(),
    // A Uint32Array: the native entries read it in place (an Array costs a
    // conversion per element; benchmark/NOTES.md §29).
    endpoints: Uint32Array.from(targets, (t) => t.endpoint),
    prefix: targets[0].prefix,
    names: targets.map((t) => endpointName(t.endpoint)),
    cluster: targets.some((t) => t.cluster)
  }
}

module.exports = { serversFor }
