'use strict'

/**
 * One acquisition's lost-lock state, the same for both faces: an
 * AbortSignal made on first use (so a lock nobody asks for a signal pays
 * for none) and, once lost, the LockLostError that aborted it.
 */

const { lockLost } = require('./errors')
const trace = require('./trace')

/** A hold with no signal made yet and not lost. */
function newHold () {
  return { controller: null, lost: null }
}

/**
 * Marks `hold` lost for `reason` (once), aborts its signal with `error`
 * (by default the LockLostError; a face whose original has its own class
 * passes its own) and tells the `redislock-rs:lost` channel (`face` names
 * the face).
 */
function lose (hold, reason, key, face, error = lockLost(reason, key)) {
  if (hold.lost !== null) return
  hold.lost = error
  if (hold.controller !== null) hold.controller.abort(hold.lost)
  trace.lost(face, [key], reason, hold.lost)
}

/** The AbortSignal of `hold` (null: no hold yet), already aborted if lost. */
function signalOf (hold) {
  if (hold === null) return null
  if (hold.controller === null) {
    hold.controller = new AbortController()
    if (hold.lost !== null) hold.controller.abort(hold.lost)
  }
  return hold.controller.signal
}

// A lock's current (or last) hold. A lock whose class keeps a slot for it
// (`this[kHold] = null` in its constructor: an ordinary property store,
// cheaper per lock than a definition) has it there; a lock that keeps its
// own properties to a peer's shape (the node-redlock faces, which deep
// equality and inspection see whole) gets it as a non-enumerable property
// on first use.
const kHold = Symbol('redislock-rs.hold')

/** `lock`'s hold, made on first use (lib/common/lock-base.js). */
function holdOf (lock) {
  const hold = lock[kHold]
  if (hold !== null && hold !== undefined) return hold
  const made = newHold()
  if (hold === null) lock[kHold] = made
  else Object.defineProperty(lock, kHold, { value: made, writable: true, configurable: true })
  return made
}

/**
 * Why a Redlock report that was not granted loses its lock: 'expired' when
 * too many servers no longer had it for a majority to, else
 * 'renewal-failed' (not confirmed in time).
 */
function lostReason (report) {
  const refused = report.servers.filter((s) => s.outcome === 'not-ours').length
  return refused > report.servers.length - report.quorum ? 'expired' : 'renewal-failed'
}

module.exports = { newHold, lose, signalOf, holdOf, lostReason, kHold }
