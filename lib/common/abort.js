'use strict'

/**
 * `acquire(key, { signal })` for both lock kinds: reading the option, and
 * racing the native wait with the signal. An abort rejects at once and
 * cancels the native wait (src/waiting/cancel.rs); if the attempt in flight wins
 * anyway, the lock's settle function sees `ctx.aborted` and gives it back.
 */

const { inspect } = require('util')
const Promise = require('bluebird')
const keeper = require('./keeper')
const { LockAcquisitionError } = require('./errors')

function isSignal (s) {
  return s !== null && typeof s === 'object' && typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function'
}

/**
 * The `signal` of acquire's second argument: `{ signal }` (null when none)
 * or `{ error }` for one that is not an AbortSignal. As in redislock,
 * anything but an options object is ignored; `signal` is read once, and a
 * getter that throws counts as none.
 */
// The common case, without an allocation per acquire.
const NO_SIGNAL = Object.freeze({ signal: null, error: undefined })

function signalOption (options) {
  if (options === null || typeof options !== 'object') return NO_SIGNAL
  let s
  try {
    s = options.signal
  } catch (_) {}
  if (s === undefined || s === null) return NO_SIGNAL
  let ok = false
  try { ok = isSignal(s) } catch (_) {}
  if (!ok) {
    const shown = inspect(s, { breakLength: Infinity, maxStringLength: 200, depth: 0 })
    return { error: new LockAcquisitionError(`acquire option signal must be an AbortSignal; got ${shown}`) }
  }
  return { signal: s }
}

/** The rejection of an acquire of `key` whose `signal` fired. */
function abortedError (key, signal) {
  return new LockAcquisitionError(`Acquiring lock on "${key}" was aborted`, { cause: signal.reason })
}

/**
 * `inner` (the native acquire), rejected at once when `signal` aborts:
 * `ctx.aborted` is set, the native wait registered as `cancelId` is
 * cancelled. The settle function removes `ctx.onAbort` when it runs.
 */
function abortable (inner, signal, ctx, key, cancelId) {
  return new Promise(function (resolve, reject) {
    ctx.onAbort = function () {
      ctx.aborted = abortedError(key, signal)
      keeper.cancel(cancelId)
      reject(ctx.aborted)
    }
    signal.addEventListener('abort', ctx.onAbort, { once: true })
    inner.then(resolve, reject)
  })
}

module.exports = { signalOption, abortedError, abortable }
