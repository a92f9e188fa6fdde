'use strict'

/**
 * node-redisson 1.0.4's reentrant lock (`redisson.getLock(name, clientId)`)
 * over the native core: one native call per operation. Waiting, wake-ups on
 * release and the watchdog's renewals run in Rust (src/reentrant.rs,
 * src/wakeups.rs, src/watchdog.rs); here are node-redisson's argument rules,
 * names and errors.
 */

const { randomUUID } = require('crypto')
const { start } = require('../operations')
const { RedissonLockError, nativeMessage } = require('../errors')
const { TimeUnit } = require('./timeunit')

// Operation codes (src/node/redisson.rs).
const TRY_LOCK = 0
const UNLOCK = 1
const FORCE_UNLOCK = 2
const IS_LOCKED = 3
// Outcome 3: an unlock that released the last hold (src/node/done.rs).
const RELEASED = 3

const MAX_MS = BigInt(Number.MAX_SAFE_INTEGER)

/** node-redisson's `prefixName`: braces unless the name starts with one. */
function prefixName (prefix, name) {
  return `${prefix}:${name.startsWith('{') ? name : `{${name}}`}`
}

function checkUnit (unit) {
  if (!(unit instanceof TimeUnit) && !(unit !== null && typeof unit === 'object' && typeof unit.toMillis === 'function')) {
    throw new TypeError(`unit must be a TimeUnit (TimeUnit.MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS); got ${describe(unit)}`)
  }
}

function describe (v) {
  if (typeof v === 'bigint') return `${v}n`
  if (typeof v === 'string') return JSON.stringify(v)
  if (v === null || typeof v !== 'object') return String(v)
  return Object.prototype.toString.call(v)
}

/** `unit.toMillis(t)` (node-redisson's errors), then a range check of our own. */
function millis (unit, t, what) {
  const ms = unit.toMillis(t)
  if (typeof ms !== 'bigint') throw new TypeError(`unit.toMillis must return a bigint; got ${describe(ms)}`)
  if (ms < 0n) throw new RangeError(`${what} must not be negative; got ${describe(t)}`)
  if (ms > MAX_MS) throw new RangeError(`${what} is too large: ${ms} ms is more than Number.MAX_SAFE_INTEGER`)
  return Number(ms)
}

/** The lease for an attempt: `null` for the watchdog, else ms. */
function leaseOf (leaseTime, unit) {
  // node-redisson: `leaseTime !== true && leaseTime > 0` means a fixed lease.
  if (leaseTime === true || leaseTime === undefined || leaseTime === 0 || leaseTime === 0n) return null
  if (typeof leaseTime !== 'number' && typeof leaseTime !== 'bigint') {
    throw new TypeError(`leaseTime must be a number, a bigint or true (the watchdog); got ${describe(leaseTime)}`)
  }
  const ms = millis(unit, leaseTime, 'leaseTime')
  return ms === 0 ? null : ms
}

function settleTryLock (lock, lease, outcome, err, resolve, reject) {
  if (err) return reject(lock._wrap(err))
  // node-redisson: a fixed lease becomes the lease of later unlocks.
  if (outcome && lease !== null) lock._leaseMs = lease
  resolve(outcome === 1)
}

function settleUnlock (lock, _, outcome, err, resolve, reject) {
  if (err) return reject(lock._wrap(err))
  if (outcome === 0) {
    return reject(new RedissonLockError('attempt to unlock lock, not locked by current client', lock._name, lock._redisson._id, lock._clientId))
  }
  if (outcome === RELEASED) lock._leaseMs = lock._redisson._watchdogMs
  resolve()
}

function settleBool (lock, _, outcome, err, resolve, reject) {
  if (err) return reject(lock._wrap(err))
  resolve(outcome !== 0)
}

class RLock {
  constructor (redisson, name, clientId) {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError(`getLock(name): name must be a non-empty string; got ${describe(name)}`)
    }
    if (clientId !== undefined && clientId !== null && (typeof clientId !== 'string' || clientId === '')) {
      throw new TypeError(`getLock(name, clientId): clientId must be a non-empty string; got ${describe(clientId)}`)
    }
    this._redisson = redisson
    this._name = name
    this._clientId = clientId ?? randomUUID()
    this._leaseMs = redisson._watchdogMs
    const prefix = redisson._target.prefix
    this._key = prefix + name
    this._channel = prefix + prefixName('redisson_lock__channel', name)
    this._field = `${redisson._id}:${this._clientId}`
  }

  get name () {
    return this._name
  }

  get clientId () {
    return this._clientId
  }

  /**
   * Takes the lock, waiting at most `waitTime` (`false`: forever; 0: one
   * attempt). `leaseTime` `true` (or 0) lets the watchdog renew the lease
   * until `unlock`. Resolves `true` when held.
   */
  tryLock (waitTime, leaseTime, unit = TimeUnit.MILLISECONDS) {
    let wait, lease
    try {
      checkUnit(unit)
      if (waitTime === false) {
        wait = -1
      } else {
        if (waitTime === true || waitTime === undefined) {
          throw new TypeError(`waitTime must be a number, a bigint or false (wait forever); got ${describe(waitTime)}`)
        }
        wait = millis(unit, waitTime, 'waitTime')
      }
      lease = leaseOf(leaseTime, unit)
    } catch (err) {
      return Promise.reject(err)
    }
    return this._run(settleTryLock, lease, TRY_LOCK, '', lease === null ? this._leaseMs : lease, wait, lease === null)
  }

  /** Takes the lock, waiting as long as it takes. */
  lock (leaseTime = true, unit) {
    return this.tryLock(false, leaseTime, unit).then(() => undefined)
  }

  /**
   * One hold fewer; the last one deletes the lock and wakes its waiters.
   * Rejects with RedissonLockError when this client does not hold it.
   */
  unlock () {
    const latch = this._redisson._target.prefix + `${prefixName('redisson_unlock_latch', this._name)}:${randomUUID()}`
    return this._run(settleUnlock, null, UNLOCK, latch, this._leaseMs, 0, false)
  }

  /** Deletes the lock whoever holds it; `true` when there was one. */
  forceUnlock () {
    return this._run(settleBool, null, FORCE_UNLOCK, '', 0, 0, false)
  }

  /** Whether anyone holds the lock. */
  isLocked () {
    return this._run(settleBool, null, IS_LOCKED, '', 0, 0, false)
  }

  _run (settle, extra, op, aux, lease, wait, watchdog) {
    const r = this._redisson
    if (r._closed) {
      return Promise.reject(new RedissonLockError('this Redisson instance has been closed by quit()', this._name, r._id, this._clientId))
    }
    const lock = this
    const t = r._target
    return start(settle, this, extra, function (id) {
      t.engine.redisson(t.endpoint, id, op, lock._key, lock._channel, lock._field, aux, lease, wait, watchdog, r._adapter)
    }, Promise)
  }

  _wrap (err) {
    if (err instanceof RedissonLockError) return err
    const { message, code } = nativeMessage(err)
    const e = new RedissonLockError(message, this._name, this._redisson._id, this._clientId, { cause: err })
    if (code) e.code = code
    return e
  }
}

module.exports = { RLock, prefixName }
