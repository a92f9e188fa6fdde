'use strict'

/**
 * The Lock object: redislock 1.3.0's state and methods over the native core.
 * One native call per user operation; retries and delays run in Rust.
 */

const { randomUUID } = require('crypto')
const inspect = require('util').inspect
const Promise = require('bluebird')
const { start } = require('./operations')
const { targetFor } = require('./targets')
const { LockAcquisitionError, LockReleaseError, LockExtendError, wrapError } = require('./errors')

// Hidden per-lock state: symbols stay out of Object.keys(lock).
// The engine that runs this lock's operations, and the endpoint's id it
// takes with each call (see operations.js).
const kEngine = Symbol('redislock-rs.engine')
const kEndpoint = Symbol('redislock-rs.endpoint')
// The client's key prefix (node_redis v3 `prefix`, ioredis `keyPrefix`):
// Redis sees prefix + key, as it would from the client; the user, messages
// and `_key` see the key as given, as with redislock.
const kPrefix = Symbol('redislock-rs.keyPrefix')
const kBusy = Symbol('redislock-rs.acquiring')

// What each operation's outcome does to the lock (see operations.js).

function settleAcquire (lock, key, acquired, err, resolve, reject) {
  lock[kBusy] = false
  if (err) return reject(wrapError(err, LockAcquisitionError))
  if (!acquired) return reject(new LockAcquisitionError('Could not acquire lock on "' + key + '"'))
  lock._locked = true
  lock._key = key
  Lock._acquiredLocks.set(lock._id, lock)
  resolve()
}

function settleRelease (lock, key, released, err, resolve, reject) {
  if (err) return reject(wrapError(err, LockReleaseError))
  forget(lock)
  if (!released) return reject(new LockReleaseError('Lock on "' + key + '" had expired'))
  resolve()
}

function settleExtend (lock, key, extended, err, resolve, reject) {
  if (err) return reject(wrapError(err, LockExtendError))
  if (extended) return resolve()
  forget(lock)
  reject(new LockExtendError('Lock on "' + key + '" had expired'))
}

/** Marks `lock` as not held. */
function forget (lock) {
  lock._locked = false
  lock._key = null
  Lock._acquiredLocks.delete(lock._id)
}

function rejected (err, fn) {
  const p = Promise.reject(err)
  return fn === undefined ? p : p.nodeify(fn)
}

function describeKey (key) {
  return inspect(key, { breakLength: Infinity, maxStringLength: 200, depth: 0 })
}

class Lock {
  /**
   * @param client  a Redis client, URL or options object (see createLock)
   * @param options {timeout, retries, delay}; missing ones use the defaults
   */
  constructor (client, options) {
    const target = targetFor(client)
    if (options !== undefined && options !== null && typeof options !== 'object') {
      throw new TypeError(`createLock options must be an object {timeout, retries, delay}; got ${typeof options}`)
    }
    this._id = randomUUID()
    this._locked = false
    this._key = null
    this._client = client
    this[kEngine] = target.engine
    this[kEndpoint] = target.endpoint
    this[kPrefix] = target.prefix
    this[kBusy] = false
    options = options || {}
    for (const key in Lock._defaults) {
      this[key] = Lock._defaults[key]
      if (key in options) this[key] = parseInt(options[key], 10) || 0
    }
  }

  /**
   * Takes the lock on `key`, retrying `retries` times `delay` ms apart
   * (`-1`: until it is free). Rejects with LockAcquisitionError.
   */
  acquire (key, fn) {
    if (this._locked || this[kBusy]) {
      return rejected(new LockAcquisitionError('Lock already held'), fn)
    }
    if (typeof key !== 'string' || key === '') {
      return rejected(new LockAcquisitionError(
        `Invalid lock key ${describeKey(key)}: the key must be a non-empty string`), fn)
    }
    this[kBusy] = true
    const lock = this
    const p = start(settleAcquire, this, key, function (id) {
      lock[kEngine].acquire(lock[kEndpoint], id, lock[kPrefix] + key, lock._id, lock.timeout, lock.retries, lock.delay)
    })
    return fn === undefined ? p : p.nodeify(fn)
  }

  /**
   * Deletes the lock if it is still ours. Rejects with LockReleaseError;
   * "had expired" means it was no longer ours and nothing was deleted.
   */
  release (fn) {
    if (!this._locked) {
      return rejected(new LockReleaseError('Lock has not been acquired'), fn)
    }
    const lock = this
    const key = this._key
    const p = start(settleRelease, this, key, function (id) {
      lock[kEngine].release(lock[kEndpoint], id, lock[kPrefix] + key, lock._id)
    })
    return fn === undefined ? p : p.nodeify(fn)
  }

  /**
   * Sets the lock's time to live to `time` ms if it is still ours. Rejects
   * with LockExtendError; on "had expired" the lock is marked released.
   */
  extend (time, fn) {
    if (typeof time !== 'number' || !time || time !== parseInt(time, 10)) {
      return rejected(new LockExtendError('Int time is required to extend lock'), fn)
    }
    if (time < 0 || time > Number.MAX_SAFE_INTEGER) {
      return rejected(new LockExtendError(
        `Int time is required to extend lock: ${time} is not a positive number of milliseconds`), fn)
    }
    if (!this._locked) {
      return rejected(new LockExtendError('Lock has not been acquired'), fn)
    }
    const lock = this
    const key = this._key
    const p = start(settleExtend, this, key, function (id) {
      lock[kEngine].extend(lock[kEndpoint], id, lock[kPrefix] + key, lock._id, time)
    })
    return fn === undefined ? p : p.nodeify(fn)
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

module.exports = Lock
