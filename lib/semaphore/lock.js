'use strict'

/**
 * redis-semaphore 5.8's `Lock`, the base of its mutexes and semaphores, over
 * the native core (one server, or a quorum of several for the Redlock
 * variants): the same options and defaults, checks and messages,
 * `acquire`/`tryAcquire`/`release`/`stopRefresh`, `identifier` and
 * `isAcquired`. Each call is one native operation (src/node/ops/semaphore.rs):
 * the retries run in Rust, and the refresh is the lease keeper's, off the
 * event loop (a stalled loop does not lose the lock; a wedged process
 * does, after max(30 s, 3 × lockTimeout) of stall). A lost lock aborts
 * `lock.signal` with a LostLockError and calls `onLockLost` as theirs does
 * (the default throws it, as an unhandled rejection). Beyond theirs,
 * `wakeOnRelease: true` makes a release announce itself and a waiting
 * acquire try again at once (polling every retryInterval stays the rule).
 */

const crypto = require('crypto')
const { start } = require('../native/bridge')
const { LockOp, Flag: { Keep: F_KEEP, Wake: F_WAKE }, Outcome: { No: NO }, Slot, blank } = require('../native/wire')

const { Flags: SLOT_FLAGS, Env: SLOT_ENV, Hold: SLOT_HOLD, MaxLagMs: SLOT_MAX_LAG, Cancel: SLOT_CANCEL } = Slot
const { Time: SLOT_TIME, Limit: SLOT_LIMIT, Permits: SLOT_PERMITS, Attempts: SLOT_ATTEMPTS, WaitMs: SLOT_WAIT_MS, Delay: SLOT_DELAY } = Slot
const native = require('../native/loader')
const { endpointName } = native
const keeper = require('../common/keeper')
const trace = require('../common/trace')
const { LostLockError, TimeoutError } = require('./errors')
const { LockBase, kHold } = require('../common/lock-base')
const { lose, holdOf } = require('../common/holds')

/** redis-semaphore's defaults; one live object, read at each construction (as theirs). */
const defaultTimeoutOptions = {
  lockTimeout: 10000,
  acquireTimeout: 10000,
  acquireAttemptsLimit: Number.POSITIVE_INFINITY,
  retryInterval: 10
}

function defaultOnLockLost (err) {
  throw err
}

/** Sets where `lock`'s operations go (the classes' constructors). */
function setTarget (lock, target) {
  stateOf(lock).target = target
}

let stateOf

class Lock extends LockBase {
  // Hidden per-lock state, in one private field (the lock keeps
  // redis-semaphore's own properties, and a private field costs no
  // property definition per lock: Object.defineProperty took 2 % of the
  // JavaScript thread at 16 workers, NOTES §29): where its operations go
  // (`target`), its hold id with the keeper and the wakeOnRelease flag.
  // The lost-lock state (`signal`) is the one every face's lock has
  // (lib/common/lock-base.js, lib/common/holds.js).
  #state

  static {
    stateOf = (lock) => lock.#state
  }

  constructor ({
    lockTimeout = defaultTimeoutOptions.lockTimeout,
    acquireTimeout = defaultTimeoutOptions.acquireTimeout,
    acquireAttemptsLimit = defaultTimeoutOptions.acquireAttemptsLimit,
    retryInterval = defaultTimeoutOptions.retryInterval,
    refreshInterval = Math.round(lockTimeout * 0.8),
    onLockLost = defaultOnLockLost,
    externallyAcquiredIdentifier,
    identifierSuffix,
    identifier,
    acquiredExternally,
    wakeOnRelease
  } = defaultTimeoutOptions) {
    if (identifier !== undefined && (!identifier || typeof identifier !== 'string')) {
      throw new Error('identifier must be not empty random string')
    }
    if (acquiredExternally && !identifier) {
      throw new Error('acquiredExternally=true meanless without custom identifier')
    }
    if (externallyAcquiredIdentifier && (identifier || acquiredExternally)) {
      throw new Error('Invalid usage. Use custom identifier and acquiredExternally: true')
    }
    // Beyond theirs: numbers that would make a lock that cannot work are
    // refused now, with an Error (the class of theirs) saying why.
    if (!Number.isSafeInteger(lockTimeout) || lockTimeout < 1) {
      throw new Error(`lockTimeout must be a positive integer number of milliseconds; got ${String(lockTimeout)}`)
    }
    ms(acquireTimeout, 'acquireTimeout', 0, true)
    ms(retryInterval, 'retryInterval', 0, false)
    ms(refreshInterval, 'refreshInterval', -Infinity, false)
    if (!(acquireAttemptsLimit === Number.POSITIVE_INFINITY || (Number.isSafeInteger(acquireAttemptsLimit) && acquireAttemptsLimit >= 0))) {
      throw new Error(`acquireAttemptsLimit must be a non-negative integer or Infinity; got ${String(acquireAttemptsLimit)}`)
    }
    if (typeof onLockLost !== 'function') throw new Error(`onLockLost must be a function; got ${typeof onLockLost}`)
    if (wakeOnRelease !== undefined && typeof wakeOnRelease !== 'boolean') throw new Error(`wakeOnRelease must be a boolean; got ${typeof wakeOnRelease}`)
    super()
    this[kHold] = null
    this._refreshing = false
    this._acquired = false
    this._acquiredExternally = !!acquiredExternally || !!externallyAcquiredIdentifier
    this._identifier = identifier || externallyAcquiredIdentifier || newIdentifier(identifierSuffix)
    this._acquireOptions = { lockTimeout, acquireTimeout, acquireAttemptsLimit, retryInterval, identifier: this._identifier }
    this._refreshTimeInterval = refreshInterval
    this._onLockLost = onLockLost
    this.#state = { target: null, hold: 0, wake: wakeOnRelease === true ? F_WAKE : 0 }
  }

  get identifier () {
    return this._identifier
  }

  get isAcquired () {
    return this._acquired
  }

  acquire (abortSignal) {
    try {
      return this._acquire(abortSignal, settleOrTimeout)
    } catch (err) {
      // As theirs (async methods): anything thrown is a rejection.
      return Promise.reject(err)
    }
  }

  tryAcquire (abortSignal) {
    try {
      return this._acquire(abortSignal, settleTry)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * One acquire (or, for a lock acquired externally, one refresh), settled
   * by `settle` (settleTry: true or false; settleOrTimeout: theirs
   * TimeoutError for a no): the bookkeeping of a grant is done in the settle
   * function itself, with no promise chained after the native one.
   */
  _acquire (abortSignal, settle) {
    const hold = this._refreshTimeInterval > 0 ? keeper.holdId() : 0
    if (this._acquiredExternally) return this._native(LockOp.Extend, hold, null, settle)
    const { acquireTimeout, acquireAttemptsLimit } = this._acquireOptions
    // As theirs: no time or no attempts left is a plain "no", before an abort.
    if (!(acquireTimeout > 0) || !(acquireAttemptsLimit > 0)) {
      return settle === settleTry ? Promise.resolve(false) : Promise.reject(timeoutOf(this))
    }
    if (abortSignal === undefined || abortSignal === null) return this._native(LockOp.Acquire, hold, null, settle)
    if (abortSignal.aborted) return Promise.reject(abortSignal.reason)
    const cancel = keeper.cancelId()
    const onAbort = () => keeper.cancel(cancel)
    abortSignal.addEventListener('abort', onAbort)
    return this._native(LockOp.Acquire, hold, cancel, settleTry).then((got) => {
      abortSignal.removeEventListener('abort', onAbort)
      // Granted as the abort came: theirs keeps such a lock too.
      if (!got && abortSignal.aborted) throw abortSignal.reason
      if (settle === settleTry) return got
      if (!got) throw timeoutOf(this)
    }, (err) => {
      abortSignal.removeEventListener('abort', onAbort)
      if (settle !== settleTry && err.code === 'ERR_REDIS_TIMEOUT') throw timeoutOf(this, err)
      throw err
    })
  }

  release () {
    const st = this.#state
    const hold = st.hold
    if (hold !== 0) keeper.unwatch(hold)
    st.hold = 0
    if (this._acquired || this._acquiredExternally) return this._native(LockOp.Release, hold, null, settleRelease)
    this._acquired = false
    this._acquiredExternally = false
    return Promise.resolve()
  }

  /** Stops refreshing (the lock then expires by its lockTimeout), sending nothing. */
  stopRefresh () {
    const st = this.#state
    const hold = st.hold
    if (hold === 0) return
    keeper.unwatch(hold)
    st.hold = 0
    const t = this._target()
    try { native.keeperDrop(firstEndpoint(t), t.prefix + this._key, this._identifier) } catch (_) {}
  }

  _watch (hold) {
    const st = this.#state
    st.hold = hold
    const t = st.target
    const where = { endpoint: firstEndpoint(t), key: t.prefix + this._key, token: this._identifier }
    keeper.watch(hold, this, where, (reason) => {
      if (st.hold !== hold) return
      st.hold = 0
      if (!this._acquired) return
      this._acquired = false
      const err = new LostLockError(`Lost ${this._kind} for key ${this._key}`)
      lose(holdOf(this), reason, this._key, 'semaphore', err)
      // As theirs: onLockLost runs as a method of the lock, and what it
      // throws (the default throws `err`) is an unhandled rejection.
      Promise.resolve().then(() => this._onLockLost(err))
    })
  }

  _target () {
    return this.#state.target
  }

  /** One native operation, settled by `settle` (the hold is its second argument). */
  _native (op, hold, cancel, settle) {
    const st = this.#state
    const t = st.target
    const args = numbersOf(this)
    args[SLOT_FLAGS] = (hold !== 0 ? F_KEEP : 0) | (op === LockOp.Extend ? 0 : st.wake)
    if (hold !== 0 || cancel !== null) args[SLOT_ENV] = keeper.envId()
    if (hold !== 0) {
      args[SLOT_HOLD] = hold
      args[SLOT_MAX_LAG] = keeper.lagBound(this._acquireOptions.lockTimeout)
    }
    if (cancel !== null) args[SLOT_CANCEL] = cancel
    const key = t.prefix + this._key
    const identifier = this._identifier
    if (t.endpoints !== undefined) {
      // A Redlock variant: every server at once, granted on a quorum.
      return start(settle, this, hold, function (id) {
        t.engine.semaphores(t.endpoints, id, op, key, identifier, args)
      }, Promise)
    }
    return start(settle, this, hold, function (id) {
      t.engine.semaphore(t.endpoint, id, op, key, identifier, args)
    }, Promise)
  }
}

/**
 * The numbers every operation of `lock` starts from, written by slot into
 * lib/native/wire.js's buffer (`blank`; a lock is often made for one use,
 * so nothing is kept per lock).
 */
function numbersOf (lock) {
  const o = lock._acquireOptions
  const args = blank()
  args[SLOT_TIME] = o.lockTimeout
  args[SLOT_LIMIT] = lock._limit || 0
  args[SLOT_PERMITS] = lock._permits || 0
  args[SLOT_ATTEMPTS] = o.acquireAttemptsLimit === Number.POSITIVE_INFINITY ? -1 : o.acquireAttemptsLimit
  args[SLOT_WAIT_MS] = o.acquireTimeout === Number.POSITIVE_INFINITY ? -1 : Math.ceil(o.acquireTimeout)
  args[SLOT_DELAY] = Math.ceil(o.retryInterval)
  return args
}

/** A grant's bookkeeping: held (a new signal on first use), and watched by the keeper when refreshed. */
function granted (lock, hold) {
  lock._acquired = true
  lock._acquiredExternally = false
  lock[kHold] = null
  if (hold !== 0) lock._watch(hold)
}

// A granted acquire answers the attempts it took (src/node/ops/semaphore.rs);
// the refresh that takes an externally acquired lock, a bare yes.

/** tryAcquire's end: true when granted, false when not. */
function settleTry (lock, hold, outcome, err, resolve, reject, attempts) {
  if (err) return reject(err)
  if (outcome === NO) return resolve(false)
  trace.attempts(lock, attempts)
  granted(lock, hold)
  resolve(true)
}

/**
 * acquire's end: granted, or their TimeoutError — also when Redis did not
 * answer within acquireTimeout (the native error as its `cause`).
 */
function settleOrTimeout (lock, hold, outcome, err, resolve, reject, attempts) {
  if (err) return reject(err.code === 'ERR_REDIS_TIMEOUT' ? timeoutOf(lock, err) : err)
  if (outcome === NO) return reject(timeoutOf(lock))
  trace.attempts(lock, attempts)
  granted(lock, hold)
  resolve()
}

/** release's end; as theirs, a failed release (one server) leaves the flags, a Redlock variant's never fails. */
function settleRelease (lock, hold, outcome, err, resolve, reject) {
  if (err && lock._target().endpoints === undefined) return reject(err)
  lock._acquired = false
  lock._acquiredExternally = false
  resolve()
}

function timeoutOf (lock, cause) {
  const message = `Acquire ${lock._kind} ${lock._key} timeout`
  return cause === undefined ? new TimeoutError(message) : new TimeoutError(message, { cause })
}

/** The endpoint the keeper knows a lock by (a Redlock variant's first server). */
function firstEndpoint (t) {
  return t.endpoint !== undefined ? t.endpoint : t.endpoints[0]
}

function newIdentifier (suffix) {
  return suffix ? `${crypto.randomUUID()}-${suffix}` : crypto.randomUUID()
}

function ms (v, name, min, infinite) {
  if (infinite && v === Number.POSITIVE_INFINITY) return
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min) {
    throw new Error(`${name} must be a number of milliseconds${min > -Infinity ? ` ≥ ${min}` : ''}; got ${String(v)}`)
  }
}

// diagnostics_channel (lib/common/trace.js).
const about = (lock) => {
  const t = lock._target()
  return { kind: lock._kind, servers: t === null ? [] : (t.names || [endpointName(t.endpoint)]) }
}
trace.instrument(Lock.prototype, 'semaphore', about, {
  acquire: { op: 'acquire', keys: (lock) => [lock._key], outcome: () => 'granted' },
  tryAcquire: { op: 'acquire', keys: (lock) => [lock._key], outcome: (got) => got ? 'granted' : 'timed-out' },
  release: { op: 'release', keys: (lock) => [lock._key], outcome: () => 'released' }
})

module.exports = { Lock, defaultTimeoutOptions, setTarget }
