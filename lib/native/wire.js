'use strict'

/**
 * The numbers a native lock call takes, slot by slot: stated once here for
 * every caller (src/node/ops/lockx.rs reads them by position).
 */

/**
 * The 11 numbers of a `lockx` call: the time (an acquire's TTL, an
 * extend's new TTL, else 0), retries, delay, the option bits (codes.js),
 * the keeper's hold id and environment id (0: none), the longest
 * event-loop lag and hold the keeper allows (ms, 0: no limit), the cancel
 * id (0: none), and the replicas that must acknowledge with their timeout
 * (0: none).
 */
function lockxNums (ms, retries, delay, flags, hold, env, maxLagMs, maxHoldMs, cancelId, replicas, replicaTimeoutMs) {
  return [ms, retries, delay, flags, hold, env, maxLagMs, maxHoldMs, cancelId, replicas, replicaTimeoutMs]
}

/** The slot of the cancel id in lockxNums. */
const LOCKX_CANCEL = 8

module.exports = { lockxNums, LOCKX_CANCEL }
