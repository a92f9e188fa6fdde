'use strict'

/**
 * What Java Redisson's synchronizers on the Redisson face share
 * (semaphore.js, permit-semaphore.js, latch.js): Java's naming rules for
 * derived keys and channels, the argument checks, and `_run`, one native
 * call per operation (src/node/ops/synchronizers.rs), as rlock.js's.
 */

const { start } = require('../native/bridge')
const { keySlot, endpointName } = require('../native/loader')
const { RedissonLockError, nativeMessage } = require('../common/errors')
const { describe, millis: unitMillis } = require('./args')
const { nums, Outcome: { No: NO } } = require('../native/wire')

const INT_MAX = 2147483647
const INT_MIN = -2147483648

/** An integer (number or bigint) in min..max, as a number; `what` names it. */
function integer (v, what, min, max) {
  if (typeof v !== 'number' && typeof v !== 'bigint') {
    throw new TypeError(`${what} must be an integer; got ${describe(v)}`)
  }
  if (typeof v === 'number' && !Number.isInteger(v)) {
    throw new RangeError(`${what} must be an integer; got ${describe(v)}`)
  }
  if (v < min || v > max) {
    throw new RangeError(`${what} must be an integer from ${min} to ${max}; got ${describe(v)}`)
  }
  return Number(v)
}

/** Permits: a Java int, at least `min`. */
function permitsOf (v, min = 0) {
  return integer(v, 'permits', min, INT_MAX)
}

/** `t` in `unit` as ms (a number), at least `min`: an integer number or bigint. */
function millis (t, unit, what, min = 0) {
  if (typeof t !== 'number' && typeof t !== 'bigint') {
    throw new TypeError(`${what} must be a number or a bigint; got ${describe(t)}`)
  }
  if (typeof t === 'number' && !Number.isInteger(t)) {
    throw new RangeError(`${what} must be an integer; got ${describe(t)}`)
  }
  return unitMillis(unit, t, what, min)
}

/**
 * The base of the three objects: `name` as given, the key (the target's
 * prefix and the name), and the derived `keys` that Java's scripts name
 * beside it (on Redis Cluster they must share the key's slot).
 */
class SyncObject {
  constructor (redisson, name, what) {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError(`${what}(name): name must be a non-empty string; got ${describe(name)}`)
    }
    this._redisson = redisson
    this._name = name
    this._key = redisson._target.prefix + name
  }

  /** Refuses a name whose keys would not share a slot on Redis Cluster. */
  _checkSlots (what, keys) {
    if (!this._redisson._target.cluster) return
    const slot = keySlot(this._key)
    for (const k of keys) {
      if (keySlot(k) !== slot) {
        throw new TypeError(`${what}(name): on Redis Cluster ${JSON.stringify(this._key)} and ${JSON.stringify(k)} (Redisson's naming) would hash to different slots, so its scripts would fail (CROSSSLOT); use a name without braces, or one whose hash tag covers both`)
      }
    }
  }

  get name () {
    return this._name
  }

  /**
   * Operation `op` (a `SyncOp`) with permit id `arg` and `fields`
   * (lib/native/wire.js `nums`); `settle(obj, extra, outcome, err,
   * resolve, reject, value)` as bridge.js's.
   */
  _run (settle, extra, op, arg, fields) {
    const r = this._redisson
    if (r._closed) {
      return Promise.reject(new RedissonLockError('this Redisson instance has been closed by quit()', this._name, r._id, ''))
    }
    const t = r._target
    const key = this._key
    const channel = this._channel
    const timeout = this._timeout || ''
    const args = nums(fields)
    return start(settle, this, extra, function (id) {
      t.engine.rsync(t.endpoint, id, op, key, channel, timeout, arg, args)
    }, Promise)
  }

  _wrap (err) {
    if (err instanceof RedissonLockError) return err
    const { message, code } = nativeMessage(err)
    const e = new RedissonLockError(message, this._name, this._redisson._id, '', { cause: err })
    if (code) e.code = code
    return e
  }
}

// Settles: the outcome as a boolean, as nothing, as the number it carries.
function settleBool (obj, _, outcome, err, resolve, reject) {
  if (err) return reject(obj._wrap(err))
  resolve(outcome !== NO)
}

function settleVoid (obj, _, outcome, err, resolve, reject) {
  if (err) return reject(obj._wrap(err))
  resolve()
}

function settleNumber (obj, _, outcome, err, resolve, reject, value) {
  if (err) return reject(obj._wrap(err))
  resolve(typeof value === 'number' ? value : 0)
}

/**
 * The face's `{ kind, servers }` for diagnostics_channel
 * (lib/common/trace.js `instrument`), for a synchronizer of `kind`.
 */
function traced (kind) {
  return (obj) => ({ kind, servers: [endpointName(obj._redisson._target.endpoint)] })
}

/** A promise rejected with what `fn` throws, else `fn`'s promise. */
function guarded (fn) {
  try {
    return fn()
  } catch (err) {
    return Promise.reject(err)
  }
}

module.exports = {
  SyncObject,
  integer,
  permitsOf,
  millis,
  settleBool,
  settleVoid,
  settleNumber,
  guarded,
  traced,
  NO,
  INT_MIN,
  INT_MAX
}
