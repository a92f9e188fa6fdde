'use strict'

/**
 * The Lock object: redislock 1.3.0's state and methods over the native core.
 * One native call per user operation; retries and delays run in Rust.
 */

const { randomUUID } = require('crypto')
const inspect = require('util').inspect
const Promise = require('bluebird')
const { RedisConnection, Completer } = require('./native')
const { LockAcquisitionError, LockReleaseError, LockExtendError, wrapError } = require('./errors')
const { connectOptionsFor, CLIENT_KINDS } = require('./clients')

// Hidden per-lock state: symbols stay out of Object.keys(lock).
const kNative = Symbol('redislock-rs.connection')
const kBusy = Symbol('redislock-rs.acquiring')

/** Native connections for client objects and URL strings we have seen. */
const byClient = new WeakMap()
const byUrl = new Map()

function nativeFor (client) {
  const cache = typeof client === 'string' ? byUrl : (client !== null && typeof client === 'object' ? byClient : null)
  let native = cache ? cache.get(client) : undefined
  if (native === undefined) {
    const options = connectOptionsFor(client)
    try {
      native = new RedisConnection(options)
    } catch (err) {
      const why = String(err && err.message).replace(/^\[[A-Z_]+\] /, '')
      throw new TypeError(`createLock expects ${CLIENT_KINDS}; got unusable settings: ${why}`, { cause: err })
    }
    if (cache) cache.set(client, native)
  }
  return native
}

// ---- The native hot path: one synchronous native call per operation, its
// outcome delivered in batches to onDone (see Completer in src/node.rs).
// Each pending operation is a slot: [kind, lock, key, resolve, reject].
const OP_ACQUIRE = 0
const OP_RELEASE = 1
const OP_EXTEND = 2
const slots = []
const freeIds = []
let inflight = 0
// Pending operations keep Node alive through this timer, ref'd only while
// some are in flight; the native side holds nothing that does.
const keepAlive = setInterval(function () {}, 0x7fffffff)
keepAlive.unref()
let completer = null

function onDone (codes, errors) {
  let e = 0
  const n = codes.length
  inflight -= n
  if (inflight === 0) keepAlive.unref()
  for (let i = 0; i < n; i++) {
    const code = codes[i]
    const id = code >>> 2
    const slot = slots[id]
    slots[id] = undefined
    freeIds.push(id)
    const outcome = code & 3
    settle(slot, outcome === 1, outcome === 2 ? new Error(errors[e++]) : null)
  }
}

function settle (slot, done, err) {
  const lock = slot[1]
  const key = slot[2]
  switch (slot[0]) {
    case OP_ACQUIRE:
      lock[kBusy] = false
      if (err) return slot[4](wrapError(err, LockAcquisitionError))
      if (!done) return slot[4](new LockAcquisitionError('Could not acquire lock on "' + key + '"'))
      lock._locked = true
      lock._key = key
      Lock._acquiredLocks.set(lock._id, lock)
      return slot[3]()
    case OP_RELEASE:
      if (err) return slot[4](wrapError(err, LockReleaseError))
      lock._locked = false
      lock._key = null
      Lock._acquiredLocks.delete(lock._id)
      if (!done) return slot[4](new LockReleaseError('Lock on "' + key + '" had expired'))
      return slot[3]()
    default:
      if (err) return slot[4](wrapError(err, LockExtendError))
      if (done) return slot[3]()
      lock._locked = false
      lock._key = null
      Lock._acquiredLocks.delete(lock._id)
      return slot[4](new LockExtendError('Lock on "' + key + '" had expired'))
  }
}

/** Starts operation `kind` and returns its Bluebird promise; `start(id)` makes the native call. */
function pending (kind, lock, key, start) {
  if (completer === null) completer = new Completer(onDone)
  const id = freeIds.length > 0 ? freeIds.pop() : slots.length
  const slot = [kind, lock, key, null, null]
  const p = new Promise(function (resolve, reject) {
    slot[3] = resolve
    slot[4] = reject
  })
  slots[id] = slot
  start(id)
  if (inflight++ === 0) keepAlive.ref()
  return p
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
    const native = nativeFor(client)
    if (options !== undefined && options !== null && typeof options !== 'object') {
      throw new TypeError(`createLock options must be an object {timeout, retries, delay}; got ${typeof options}`)
    }
    this._id = randomUUID()
    this._locked = false
    this._key = null
    this._client = client
    this[kNative] = native
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
    const native = this[kNative]
    const lock = this
    const p = pending(OP_ACQUIRE, this, key, function (id) {
      completer.acquire(native, id, key, lock._id, lock.timeout, lock.retries, lock.delay)
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
    const native = this[kNative]
    const lock = this
    const key = this._key
    const p = pending(OP_RELEASE, this, key, function (id) {
      completer.release(native, id, key, lock._id)
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
    const native = this[kNative]
    const lock = this
    const key = this._key
    const p = pending(OP_EXTEND, this, key, function (id) {
      completer.extend(native, id, key, lock._id, time)
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
