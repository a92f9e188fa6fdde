'use strict'

/**
 * What both node-redlock faces (redlock 4 and 5) send with an operation:
 * redlock's retry settings as the native numbers, each server's time to
 * answer, and the Redis Cluster slot check of several resources.
 */

const { keySlot } = require('../native/loader')

/**
 * The retry numbers (lib/native/wire.js `nums` fields) of redlock's
 * settings. redlock waits retryDelay ± retryJitter between attempts, never
 * less than 0: here a pause of `delay` plus up to `jitterMs` more.
 */
function retryFields (retryCount, retryDelay, retryJitter, driftFactor, fallbackDrift) {
  const delay = Math.max(0, Math.floor(retryDelay) || 0)
  const jitter = Math.abs(Math.floor(retryJitter) || 0)
  const base = Math.max(0, delay - jitter)
  return {
    retries: retryCount === -1 ? -1 : Math.max(0, Math.floor(retryCount) || 0),
    delay: base,
    jitterMs: delay + jitter - base,
    driftFactor: Number.isFinite(driftFactor) ? driftFactor : fallbackDrift
  }
}

/**
 * How long each server has to answer an attempt at a lock of `ttl` ms:
 * a tenth of the TTL, at least 100 ms (redlock waits as long as its
 * clients do; a lock whose validity is used up is refused either way).
 * Never above the connection's command timeout (the native side caps it).
 */
const serverTimeout = (ttl) => Math.max(100, Math.floor(ttl / 10))

/** How long each server has to answer a release. */
const RELEASE_TIMEOUT_MS = 1000

/** On a Redis Cluster (`cluster`), the slots of `keys` when they are not all one ("5 for a, 9 for b"); else null. */
function crossSlot (cluster, keys) {
  if (!cluster || keys.length < 2) return null
  const slots = keys.map(keySlot)
  if (slots.every((s) => s === slots[0])) return null
  return keys.map((k, i) => `${slots[i]} for ${k}`).join(', ')
}

module.exports = { retryFields, serverTimeout, RELEASE_TIMEOUT_MS, crossSlot }
