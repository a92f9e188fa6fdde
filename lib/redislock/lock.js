'use strict'

/**
 * The Lock object: redislock 1.3.0's state and methods over the native core.
 * One native call per user operation; retries and delays run in Rust.
 */

const { start, rejected, tokioEngineFor } = require('../native/bridge')
const { targetFor } = require('../common/targets')
const keeper = require('../common/keeper')
const { lose } = require('../common/holds')
const { keeperRemaining, endpointName } = require('../native/loader')
const { instrument, attempts: noteAttempts } = require('../common/trace')
const { LockAcquisitionError, LockReleaseError, LockExtendError, wrapError, extendTimeError } = require('../common/errors')
const { signalOption, abortable } = require('../common/abort')
const {
  TokenLockBase, refuseAcquire, refuseUnheld, markHeld, markFree, kEngine, kEndpoint, kPrefix, kBusy, kHold
} = require('../common/lock-base')

// Hidden per-lock state (lib/common/lock-base.js): the shared symbols, and
// this lock's own. The options beyond redislock 1.3.0 (autoExtend,
// fencing, wakeOnRelease, replicas), or null: then every command is
// redislock's own. The current (or last) hold (kHold) is a newHold.
const kExtra = Symbol('redislock-rs.extra')

const { LockOp, Flag: { Keep: F_KEEP }, Outcome: { Value: VALUE }, nums } = require('../native/wire')
const { extrasOf, describeKey, F_REPLICAS } = require('./options')
const now = () => performance.now()

/**
 * One acquisition's state (lib/common/holds.js) with when its lease is known to
 * end (performance.now clock; conservative), its option bits, its keeper
 * hold id and its fencing token.
 */
function newHold (expires, flags, id, fencing) {
  // holds.newHold()'s fields, written out: this runs on every acquire, and
  // a literal of the whole shape allocates once.
  return { controller: null, lost: null, expires, flags, id, fencing }
}

function settleAcquire (lock, key, outcome, err, resolve, reject, attempts) {
  lock[kBusy] = false
  if (err) return reject(wrapError(err, LockAcquisitionError))
  // Granted: the number of attempts it took (src/node/ops/token.rs).
  if (outcome !== VALUE) return reject(new LockAcquisitionError('Could not acquire lock on "' + key + '"'))
  noteAttempts(lock, attempts)
  markHeld(lock, key, Lock._acquiredLocks)
  // The lease runs from no earlier than the call (conservative).
  lock[kHold] = newHold(lock[kStarted] + lock.timeout, 0, 0, null)
  resolve()
}

/** An acquire through lockx: `ctx` says how it was asked for. */
function settleAcquireX (lock, ctx, outcome, err, resolve, reject, value) {
  lock[kBusy] = false
  if (ctx.signal) ctx.signal.removeEventListener('abort', ctx.onAbort)
  if (err) return reject(wrapError(err, LockAcquisitionError))
  if (outcome !== VALUE) {
    if (ctx.aborted) return reject(ctx.aborted)
    if (ctx.tryOnly) return resolve(false)
    return reject(new LockAcquisitionError('Could not acquire lock on "' + ctx.key + '"'))
  }
  // `value`: the grant, { fencing (a bigint, or null), ageUs, attempts } (src/node/wire/done.rs).
  noteAttempts(lock, value.attempts)
  const fencing = value.fencing == null ? null : value.fencing
  const expires = now() - value.ageUs / 1000 + ctx.ttl
  if (ctx.aborted) {
    // Aborted while the winning attempt was in flight: give it back.
    const hold = newHold(expires, ctx.flags, ctx.hold, fencing)
    start(quietly, lock, ctx.key, submitRelease(lock, ctx.key, hold))
    return reject(ctx.aborted)
  }
  markHeld(lock, ctx.key, Lock._acquiredLocks)
  const hold = newHold(expires, ctx.flags, ctx.hold, fencing)
  lock[kHold] = hold
  if (ctx.flags & F_KEEP) {
    const where = { endpoint: lock[kEndpoint], key: lock[kPrefix] + ctx.key, token: lock._id }
    keeper.watch(ctx.hold, lock, where, (reason) => lose(hold, reason, ctx.key, 'redislock'))
  }
  resolve(ctx.tryOnly ? true : undefined)
}

function quietly () {}

function settleRelease (lock, key, released, err, resolve, reject) {
  if (err) return reject(wrapError(err, LockReleaseError))
  const hold = lock[kHold]
  forget(lock)
  if (!released) {
    lose(hold, 'expired', key, 'redislock')
    return reject(new LockReleaseError('Lock on "' + key + '" had expired'))
  }
  resolve()
}

function settleExtend (lock, key, extended, err, resolve, reject, value) {
  const hold = lock[kHold]
  if (err) {
    const e = wrapError(err, LockExtendError)
    // Not acknowledged by enough replicas: the native side released it.
    if (e.cause && e.cause.code === 'ERR_NOT_REPLICATED') {
      forget(lock)
      lose(hold, 'expired', key, 'redislock')
    }
    return reject(e)
  }
  if (extended) {
    // From the call for a plain extend; from the reply's age (µs) for lockx.
    const from = value === undefined ? lock[kExtendStarted] : now() - value / 1000
    hold.expires = from + lock[kExtendMs]
    return resolve()
  }
  forget(lock)
  lose(hold, 'expired', key, 'redislock')
  reject(new LockExtendError('Lock on "' + key + '" had expired'))
}

/** The submit function of a release of `hold` on `key`. */
function submitRelease (lock, key, hold) {
  return function (id) {
    if (hold.flags === 0) {
      lock[kEngine].release(lock[kEndpoint], id, lock[kPrefix] + key, lock._id)
    } else {
      lock[kEngine].lockx(lock[kEndpoint], id, LockOp.Release, lock[kPrefix] + key, lock._id,
        nums({ flags: hold.flags & ~F_REPLICAS, hold: hold.id, env: keeper.envId() }))
    }
  }
}

/** Marks `lock` as not held. */
function forget (lock) {
  markFree(lock, Lock._acquiredLocks)
  const hold = lock[kHold]
  if (hold !== null && hold.flags & F_KEEP) keeper.unwatch(hold.id)
}

// The extend in flight: when it was called, and its time.
const kExtendStarted = Symbol('redislock-rs.extendStarted')
const kExtendMs = Symbol('redislock-rs.extendMs')
const kStarted = Symbol('redislock-rs.acquireStarted')

/**
 * Beyond redislock: `signal` (lib/common/lock-base.js; with autoExtend the
 * keeper reports losses as they happen, without it a loss is found by
 * `extend` or `release`) and `await using` (releases if held).
 */
class Lock extends TokenLockBase {
  /**
   * @param client  a Redis client, URL or options object (see createLock)
   * @param options {timeout, retries, delay}; missing ones use the defaults
   */
  constructor (client, options) {
    const target = targetFor(client)
    if (options !== undefined && options !== null && typeof options !== 'object') {
      throw new TypeError(`createLock options must be an object {timeout, retries, delay}; got ${typeof options}`)
    }
    super(client)
    this[kEngine] = target.engine
    this[kEndpoint] = target.endpoint
    this[kPrefix] = target.prefix
    this[kExtendStarted] = 0
    this[kExtendMs] = 0
    this[kStarted] = 0
    options = options || {}
    this[kExtra] = extrasOf(options)
    // Replica-acknowledged operations each get a connection of their own
    // (WAIT blocks the one it runs on): the tokio engine keeps those lanes.
    if (this[kExtra] !== null && this[kExtra].replicas > 0) this[kEngine] = tokioEngineFor()
    for (const key in Lock._defaults) {
      this[key] = Lock._defaults[key]
      if (key in options) this[key] = parseInt(options[key], 10) || 0
    }
  }

  /**
   * Takes the lock on `key`, retrying `retries` times `delay` ms apart
   * (`-1`: until it is free). Rejects with LockAcquisitionError. `options`
   * (in place of the callback, which may follow it): `{ signal }`, an
   * AbortSignal that ends the wait at once.
   */
  acquire (key, options, fn) {
    if (typeof options === 'function') {
      fn = options
      options = undefined
    }
    return this._acquire(key, options, fn, false)
  }

  /**
   * Exactly one attempt at `key`: resolves `true` when taken, `false` when
   * it is held; rejects (LockAcquisitionError) only for real failures.
   */
  tryAcquire (key, options) {
    return this._acquire(key, options, undefined, true)
  }

  _acquire (key, options, fn, tryOnly) {
    const opt = signalOption(options)
    const refused = refuseAcquire(this, key, opt, describeKey, fn)
    if (refused !== null) return refused
    const signal = opt.signal
    const lock = this
    const extra = this[kExtra]
    if (extra === null && signal === null && !tryOnly) {
      this[kBusy] = true
      this[kStarted] = now()
      const p = start(settleAcquire, this, key, function (id) {
        lock[kEngine].acquire(lock[kEndpoint], id, lock[kPrefix] + key, lock._id, lock.timeout, lock.retries, lock.delay)
      })
      return fn === undefined ? p : p.nodeify(fn)
    }
    const flags = extra === null ? 0 : extra.flags
    const ae = extra === null ? null : extra.autoExtend
    const ctx = {
      key,
      tryOnly,
      flags,
      ttl: this.timeout,
      hold: flags & F_KEEP ? keeper.holdId() : 0,
      signal,
      onAbort: null,
      aborted: null
    }
    const cancel = signal === null ? 0 : keeper.cancelId()
    const args = nums({
      time: this.timeout,
      retries: tryOnly ? 0 : this.retries,
      delay: this.delay,
      flags: flags & ~F_REPLICAS,
      hold: ctx.hold,
      env: keeper.envId(),
      maxLagMs: keeper.maxLagMs(ae, this.timeout),
      maxHoldMs: ae === null ? 0 : (ae.maxHoldMs || 0),
      cancel,
      replicas: extra === null ? 0 : extra.replicas,
      replicaTimeoutMs: extra === null ? 0 : extra.replicaTimeout
    })
    this[kBusy] = true
    let p = start(settleAcquireX, this, ctx, function (id) {
      lock[kEngine].lockx(lock[kEndpoint], id, LockOp.Acquire, lock[kPrefix] + key, lock._id, args)
    })
    // Rejects at once on abort; an attempt in flight that wins is released
    // (settleAcquireX).
    if (signal !== null) p = abortable(p, signal, ctx, key, cancel)
    return fn === undefined ? p : p.nodeify(fn)
  }

  /**
   * Deletes the lock if it is still ours. Rejects with LockReleaseError;
   * "had expired" means it was no longer ours and nothing was deleted.
   */
  release (fn) {
    const refused = refuseUnheld(this, LockReleaseError, fn)
    if (refused !== null) return refused
    const key = this._key
    const p = start(settleRelease, this, key, submitRelease(this, key, this[kHold]))
    return fn === undefined ? p : p.nodeify(fn)
  }

  /**
   * Sets the lock's time to live to `time` ms if it is still ours. Rejects
   * with LockExtendError; on "had expired" the lock is marked released.
   */
  extend (time, fn) {
    const bad = extendTimeError(time)
    if (bad !== null) return rejected(bad, fn)
    const refused = refuseUnheld(this, LockExtendError, fn)
    if (refused !== null) return refused
    const lock = this
    const key = this._key
    const hold = this[kHold]
    this[kExtendStarted] = now()
    this[kExtendMs] = time
    const p = start(settleExtend, this, key, function (id) {
      if (hold.flags & (F_KEEP | F_REPLICAS)) {
        const extra = lock[kExtra]
        const replicas = hold.flags & F_REPLICAS
        lock[kEngine].lockx(lock[kEndpoint], id, LockOp.Extend, lock[kPrefix] + key, lock._id, nums({
          time,
          flags: hold.flags & ~F_REPLICAS,
          hold: hold.id,
          env: keeper.envId(),
          replicas: replicas ? extra.replicas : 0,
          replicaTimeoutMs: replicas ? extra.replicaTimeout : 0
        }))
      } else {
        lock[kEngine].extend(lock[kEndpoint], id, lock[kPrefix] + key, lock._id, time)
      }
    })
    return fn === undefined ? p : p.nodeify(fn)
  }

  /** The current hold's fencing token (a bigint; `fencing: true`), else null. */
  get fencingToken () {
    const hold = this[kHold]
    return hold !== null ? hold.fencing : null
  }

  /**
   * How long the lease is known to run, in ms (never negative): from the
   * keeper's last confirmed renewal with autoExtend, else from the grant or
   * the last extend, counted from when its command was sent. 0 when not held.
   */
  remainingMs () {
    const hold = this[kHold]
    if (!this._locked || hold === null || hold.lost !== null) return 0
    if (hold.flags & F_KEEP) {
      const ms = keeperRemaining(this[kEndpoint], this[kPrefix] + this._key, this._id)
      if (ms >= 0) return ms
      return 0
    }
    return Math.max(0, Math.floor(hold.expires - now()))
  }
}

/** Defaults for new locks; change them with setDefaults. */
Lock._defaults = {
  timeout: 10000,
  retries: 0,
  delay: 50
}

/** Locks held by this process, by `_id`, in acquisition order. */
Lock._acquiredLocks = new Map()

// diagnostics_channel (lib/common/trace.js).
instrument(Lock.prototype, 'redislock', (lock) => ({ kind: 'lock', servers: [endpointName(lock[kEndpoint])] }), {
  acquire: { op: 'acquire', keys: (lock, args) => [args[0]], outcome: () => 'granted', after: fencingOf },
  tryAcquire: { op: 'acquire', keys: (lock, args) => [args[0]], outcome: (got) => got ? 'granted' : 'held', after: fencingOf },
  release: { op: 'release', keys: (lock) => [lock._key], outcome: () => 'released' },
  extend: { op: 'extend', keys: (lock) => [lock._key], outcome: () => 'extended' }
})

function fencingOf (lock, ctx) {
  if (lock.fencingToken !== undefined && lock.fencingToken !== null) ctx.fencingToken = lock.fencingToken
}

module.exports = Lock
