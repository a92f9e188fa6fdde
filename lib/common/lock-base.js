'use strict'

/**
 * What every lock object shares: how it keeps its hidden state, and the
 * parts of its methods that do not depend on the face.
 *
 * Hidden state is Symbol-keyed, on every lock kind: symbols stay out of
 * Object.keys, for…in and JSON.stringify, so a lock's string-keyed fields
 * are exactly its face's own (redislock's `_id, _locked, _key, _client,
 * timeout, retries, delay`; node-redisson's `_clientId`; redlock's and
 * redis-semaphore's), and reading one is an ordinary property load. The
 * symbols every kind uses are exported here; a face's own (Lock's extras,
 * the quorum's server names, …) live in its file.
 *
 * - LockBase: every face's lock (redislock, its quorum lock, the Redisson
 *   RLock family, redlock 4 and 5, redis-semaphore's four). Its current
 *   (or last) hold (lib/common/holds.js) and the `signal` getter over it.
 *   A face says only whether a lock that never had a hold answers `null`
 *   (redislock, Redisson: `kSignalBeforeHold` false on its prototype) or a
 *   signal for the hold to come (redlock, redis-semaphore). The base's
 *   constructor adds no property: a lock shaped as a peer's (redlock 4 is
 *   not even a class) keeps exactly the peer's own properties.
 * - TokenLockBase: a lock held on one key under its token `_id`, with
 *   redislock's API (Lock and QuorumLock): the public fields, the acquire
 *   preamble, the "Lock has not been acquired" checks of release and
 *   extend, `await using`, and the held / not held bookkeeping.
 */

const { randomUUID } = require('crypto')
const Promise = require('bluebird')
const { rejected } = require('../native/bridge')
const { signalOf, holdOf, kHold } = require('./holds')
const { LockAcquisitionError } = require('./errors')
const { abortedError } = require('./abort')

// The engine that runs the lock's operations, and the endpoint's id (a
// quorum: the ids of its servers) it takes with each call (see
// lib/native/bridge.js).
const kEngine = Symbol('redislock-rs.engine')
const kEndpoint = Symbol('redislock-rs.endpoint')
const kEndpoints = Symbol('redislock-rs.endpoints')
// The client's key prefix (node_redis v3 `prefix`, ioredis `keyPrefix`):
// Redis sees prefix + key, as it would from the client; the user, messages
// and `_key` see the key as given, as with redislock.
const kPrefix = Symbol('redislock-rs.keyPrefix')
// An acquire is in flight.
const kBusy = Symbol('redislock-rs.acquiring')
// On a lock class's prototype: whether `signal` before the first hold is
// a signal for the hold to come (true) or null (false).
const kSignalBeforeHold = Symbol('redislock-rs.signalBeforeHold')

class LockBase {
  /**
   * An AbortSignal for the current (or last) hold, aborted with a
   * LockLostError (or the face's own class) when that hold is lost, never
   * by a clean release or unlock. Before the first hold: null, or where the
   * face says `kSignalBeforeHold`, a signal made now for the hold to come.
   * What finds a loss is the face's: its keeper (autoExtend, the watchdog,
   * the refresh) as it happens, else the release or extend that finds the
   * lock no longer ours.
   */
  get signal () {
    const hold = this[kHold]
    if (hold !== null && hold !== undefined) return signalOf(hold)
    return this[kSignalBeforeHold] ? signalOf(holdOf(this)) : null
  }
}

// redlock's and redis-semaphore's locks answer a signal from the start.
LockBase.prototype[kSignalBeforeHold] = true

class TokenLockBase extends LockBase {
  /**
   * redislock's public fields, in its order: `_id` (the token), `_locked`,
   * `_key`, `_client`; the face adds the rest after them.
   */
  constructor (client) {
    super()
    this[kHold] = null
    this._id = randomUUID()
    this._locked = false
    this._key = null
    this._client = client
    this[kBusy] = false
  }

  /** Releases the lock if it is held (`await using lock = …`). */
  [Symbol.asyncDispose] () {
    return this._locked ? this.release() : Promise.resolve()
  }
}

// redislock's locks answer null before their first acquire.
TokenLockBase.prototype[kSignalBeforeHold] = false

/**
 * The rejection of an acquire of `key` that must not start, else null (no
 * allocation then): in redislock's order, the `{ signal }` option's error
 * (`opt` is lib/common/abort.js signalOption's result), "Lock already held"
 * while held or acquiring, a key that is not a non-empty string (shown by
 * `describeKey`: each face words it its own way), a signal already aborted.
 */
function refuseAcquire (lock, key, opt, describeKey, fn) {
  if (opt.error !== undefined) return rejected(opt.error, fn)
  if (lock._locked || lock[kBusy]) {
    return rejected(new LockAcquisitionError('Lock already held'), fn)
  }
  if (typeof key !== 'string' || key === '') {
    return rejected(new LockAcquisitionError(
      `Invalid lock key ${describeKey(key)}: the key must be a non-empty string`), fn)
  }
  if (opt.signal !== null && opt.signal.aborted) return rejected(abortedError(key, opt.signal), fn)
  return null
}

/**
 * The rejection (an `ErrorClass`: LockReleaseError, LockExtendError) of a
 * release or extend of a lock that is not held, else null.
 */
function refuseUnheld (lock, ErrorClass, fn) {
  if (lock._locked) return null
  return rejected(new ErrorClass('Lock has not been acquired'), fn)
}

/** Marks `lock` held on `key`, in `acquired` (the process's held locks). */
function markHeld (lock, key, acquired) {
  lock._locked = true
  lock._key = key
  acquired.set(lock._id, lock)
}

/** Marks `lock` not held, and no longer in `acquired`. */
function markFree (lock, acquired) {
  lock._locked = false
  lock._key = null
  acquired.delete(lock._id)
}

module.exports = {
  LockBase,
  TokenLockBase,
  refuseAcquire,
  refuseUnheld,
  markHeld,
  markFree,
  kEngine,
  kEndpoint,
  kEndpoints,
  kPrefix,
  kBusy,
  kHold,
  kSignalBeforeHold
}
