'use strict'

/**
 * redlock 4.2.0's `Redlock` over the native core: the same constructor,
 * options and defaults, methods, messages, Bluebird promises and
 * callbacks, and the same Redis traffic (its scripts, so a redlock process
 * and this one exclude each other on the same keys). Each operation is one
 * native call (src/node/ops/redlock.rs): every server at once, each bounded
 * by a server timeout, the retries in Rust, and a lock whose validity is
 * gone never returned.
 */

const util = require('util')
const crypto = require('crypto')
const EventEmitter = require('events')
const Promise = require('bluebird')
const { start } = require('../native/bridge')
const { redlockScripts, redlockScriptSet } = require('../native/loader')
const { LockOp, Flag: { Wake: F_WAKE, GiveBack: F_GIVE_BACK }, Outcome: { Yes: YES }, nums, unpackGrant } = require('../native/wire')
const { serversFor } = require('../common/servers')
const { randomHex16 } = require('../common/random')
const { instrument } = require('../common/trace')
const { Lock, LockError, loseLock } = require('./lock')
const { retryFields, serverTimeout, RELEASE_TIMEOUT_MS, crossSlot } = require('./attempts')

// The report behind a LockError of an extend (its lock is then lost).
const kReport = Symbol('redislock-rs.report')

const SCRIPTS = redlockScripts(4)

const defaults = {
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100
}

// Hidden per-instance state: where the operations go, and the script set.
const kServers = Symbol('redislock-rs.servers')
const kScriptSet = Symbol('redislock-rs.scriptSet')
const kWake = Symbol('redislock-rs.wake')

function Redlock (clients, options) {
  options = options || {}
  this.driftFactor = typeof options.driftFactor === 'number' ? options.driftFactor : defaults.driftFactor
  this.retryCount = typeof options.retryCount === 'number' ? options.retryCount : defaults.retryCount
  this.retryDelay = typeof options.retryDelay === 'number' ? options.retryDelay : defaults.retryDelay
  this.retryJitter = typeof options.retryJitter === 'number' ? options.retryJitter : defaults.retryJitter
  this.lockScript = typeof options.lockScript === 'function' ? options.lockScript(SCRIPTS.lock) : SCRIPTS.lock
  this.unlockScript = typeof options.unlockScript === 'function' ? options.unlockScript(SCRIPTS.unlock) : SCRIPTS.unlock
  this.extendScript = typeof options.extendScript === 'function' ? options.extendScript(SCRIPTS.extend) : SCRIPTS.extend
  // Beyond redlock 4.2.0: a release wakes the waiters at once (with a
  // release script of its own, so not with an unlockScript transform).
  if (options.wakeOnRelease !== undefined && typeof options.wakeOnRelease !== 'boolean') {
    throw new TypeError(`Redlock option wakeOnRelease must be a boolean; got ${typeof options.wakeOnRelease}`)
  }
  if (options.wakeOnRelease === true && typeof options.unlockScript === 'function') {
    throw new TypeError('Redlock option wakeOnRelease announces releases with an unlock script of its own; it cannot be combined with an unlockScript transform')
  }
  this.servers = clients
  if (this.servers.length === 0) throw new Error('Redlock must be instantiated with at least one redis server.')
  for (const name of ['lockScript', 'unlockScript', 'extendScript']) {
    if (typeof this[name] !== 'string' || this[name] === '') {
      throw new TypeError(`Redlock option ${name} must be a function that returns the script's text (a non-empty string); it returned ${typeof this[name]}`)
    }
  }
  this.scripts = {
    lockScript: { value: this.lockScript, hash: this._hashScript(this.lockScript) },
    unlockScript: { value: this.unlockScript, hash: this._hashScript(this.unlockScript) },
    extendScript: { value: this.extendScript, hash: this._hashScript(this.extendScript) }
  }
  Object.defineProperty(this, kServers, { value: serversFor(Array.from(clients), 'new Redlock(clients)') })
  Object.defineProperty(this, kScriptSet, { value: redlockScriptSet(this.lockScript, this.unlockScript, this.extendScript) })
  Object.defineProperty(this, kWake, { value: options.wakeOnRelease === true ? F_WAKE : 0 })
}

util.inherits(Redlock, EventEmitter)

Redlock.LockError = LockError
Redlock.Lock = Lock

/** Runs `quit()` on every client that has one (URLs and options have none). */
Redlock.prototype.quit = function quit (callback) {
  return Promise.map(this.servers, function (client) {
    return client !== null && typeof client === 'object' && typeof client.quit === 'function' ? client.quit() : undefined
  }).nodeify(callback)
}

Redlock.prototype.acquire =
Redlock.prototype.lock = function lock (resource, ttl, callback) {
  return this._lock(resource, null, ttl, {}, callback)
}

Redlock.prototype.acquireWithOptions =
Redlock.prototype.lockWithOptions = function lockWithOptions (resource, ttl, options, callback) {
  return this._lock(resource, null, ttl, options, callback)
}

/** A Bluebird disposer for `Promise.using`: the lock, unlocked after use. */
Redlock.prototype.disposer = function disposer (resource, ttl, errorHandler) {
  errorHandler = errorHandler || function (err) {} // eslint-disable-line no-unused-vars
  return this.lock(resource, ttl).disposer(function (lock) {
    return lock.unlock().catch(errorHandler)
  })
}

/**
 * Deletes the lock on every server that still holds it for its value;
 * rejects when fewer than a majority confirmed (the rest expire by TTL).
 */
Redlock.prototype.release =
Redlock.prototype.unlock = function unlock (lock, callback) {
  const resource = Array.isArray(lock.resource) ? lock.resource : [lock.resource]
  // Immediately invalidate the lock.
  lock.expiration = 0
  const self = this
  const ctx = { redlock: this, lock, resource }
  const keys = keysOf(this, resource)
  if (keys === null) return Promise.reject(new LockError(invalidResource(resource))).nodeify(callback)
  return start(settleUnlock, self, ctx, submit(this, LockOp.Release, keys, String(lock.value), nums({ serverTimeoutMs: RELEASE_TIMEOUT_MS, flags: this[kWake] }))).nodeify(callback)
}

/** Extends a lock that has not expired to `ttl` ms; resolves with the same lock. */
Redlock.prototype.extend = function extend (lock, ttl, callback) {
  if (lock.expiration < Date.now()) {
    return Promise.reject(new LockError('Cannot extend lock on resource "' + lock.resource + '" because the lock has already expired.', 0)).nodeify(callback)
  }
  return this._lock(lock.resource, lock.value, ttl, {})
    .then(function (extension) {
      lock.value = extension.value
      lock.expiration = extension.expiration
      return lock
    }, function (err) {
      if (err !== null && typeof err === 'object' && err[kReport] !== undefined) loseLock(lock, err[kReport])
      throw err
    })
    .nodeify(callback)
}

/**
 * Takes (`value` null) or extends (`value` the lock's) `resource` for
 * `ttl` ms: `options.retryCount` and `options.retryDelay` override the
 * instance's (0 means the instance's, as in redlock 4.2.0).
 */
Redlock.prototype._lock = function _lock (resource, value, ttl, options, callback) {
  if (typeof options === 'function' && typeof callback === 'undefined') {
    callback = options
    options = {}
  }
  options = options || {}
  resource = Array.isArray(resource) ? resource : [resource]
  const retryCount = options.retryCount || this.retryCount
  const retryDelay = options.retryDelay || this.retryDelay
  const keys = keysOf(this, resource)
  if (keys === null) return Promise.reject(new LockError(invalidResource(resource), 0)).nodeify(callback)
  if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 1) {
    return Promise.reject(new LockError(`Invalid ttl ${util.inspect(ttl)} for the resource "${resource}": expected a positive integer number of milliseconds`, 0)).nodeify(callback)
  }
  const slots = crossSlot(this[kServers].cluster, keys)
  if (slots !== null) {
    return Promise.reject(new LockError(`Cannot lock the resources "${resource}" together on Redis Cluster: they hash to different slots (${slots}); give them one hash tag, such as {order:42}:a and {order:42}:b`, 0)).nodeify(callback)
  }
  const op = value === null ? LockOp.Acquire : LockOp.Extend
  if (value === null) value = this._random()
  const args = nums({
    time: ttl,
    ...retryFields(retryCount, retryDelay, this.retryJitter, this.driftFactor, defaults.driftFactor),
    serverTimeoutMs: serverTimeout(ttl),
    // As redlock 4.2.0, a failed attempt (of a lock or an extend) is given
    // back on every server (its unlock after each attempt), and what that
    // meets is told on clientError.
    flags: (op === LockOp.Acquire ? this[kWake] : 0) | F_GIVE_BACK
  })
  const ctx = { redlock: this, resource, value, retryCount }
  return start(settleLock, this, ctx, submit(this, op, keys, String(value), args)).nodeify(callback)
}

Redlock.prototype._random = function _random () {
  return randomHex16()
}

Redlock.prototype._hashScript = function _hashScript (value) {
  return crypto.createHash('sha1').update(value).digest('hex')
}

/** The submit function of operation `op` (see lib/native/bridge.js). */
function submit (redlock, op, keys, value, args) {
  const s = redlock[kServers]
  const set = redlock[kScriptSet]
  return function (id) {
    s.engine.redlock(s.endpoints, id, op, set, keys, value, args)
  }
}

/** The resources as Redis names them (with the clients' key prefix), or null if one is not a string or number. */
function keysOf (redlock, resource) {
  const prefix = redlock[kServers].prefix
  const keys = new Array(resource.length)
  for (let i = 0; i < resource.length; i++) {
    const r = resource[i]
    if ((typeof r !== 'string' || r === '') && typeof r !== 'number') return null
    keys[i] = prefix + String(r)
  }
  return keys.length > 0 ? keys : null
}

function invalidResource (resource) {
  return `Invalid resource ${util.inspect(resource, { breakLength: Infinity, depth: 1 })}: expected a non-empty string (or number), or a non-empty array of them`
}

/**
 * Tells `clientError` listeners what each server that failed said, every
 * attempt's failures and those of its give-back in order, as redlock
 * 4.2.0 emits them (a report of an operation that went well everywhere
 * lists none).
 */
function clientErrors (redlock, report) {
  if (report.failures === undefined) return
  const names = redlock[kServers].names
  for (const f of report.failures) {
    if (f.error != null) redlock.emit('clientError', new Error(f.error))
    else redlock.emit('clientError', new Error(`Redis server ${names[f.server]} did not answer in time`))
  }
}

/**
 * Beyond redlock 4.2.0's message: why no attempt could succeed when a
 * server said the resource's key holds another type of value (a data key
 * named like the lock), rather than as if another client held it.
 */
function wrongType (report) {
  const f = report.failures && report.failures.find((f) => f.error != null && f.error.startsWith('WRONGTYPE'))
  return f === undefined ? '' : ` The key holds a value of another type, not a lock (Redis: ${f.error}).`
}

function settleLock (redlock, ctx, outcome, err, resolve, reject, value) {
  if (err) return reject(wrapped(err, 0))
  const report = unpackGrant(value)
  clientErrors(redlock, report)
  if (!report.granted) {
    const e = new LockError('Exceeded ' + ctx.retryCount + ' attempts to lock the resource "' + ctx.resource + '".' + wrongType(report), report.attempts)
    Object.defineProperty(e, kReport, { value: report })
    return reject(e)
  }
  const expiration = Date.now() + report.validityMs
  resolve(new Lock(redlock, ctx.resource, ctx.value, expiration, report.attempts, ctx.retryCount - report.attempts))
}

function settleUnlock (redlock, ctx, outcome, err, resolve, reject, report) {
  if (err) return reject(wrapped(err))
  // Released everywhere: a bare yes (src/node/ops/redlock.rs).
  if (outcome === YES) return resolve()
  clientErrors(redlock, report)
  if (!report.granted) {
    loseLock(ctx.lock, report)
    return reject(new LockError('Unable to fully release the lock on resource "' + ctx.lock.resource + '".'))
  }
  resolve()
}

/** A failure of the native call itself, as a LockError with the original as `cause`. */
function wrapped (err, attempts) {
  const e = new LockError(err && err.message, attempts)
  e.cause = err
  return e
}

// diagnostics_channel (lib/common/trace.js). Lock#unlock and Lock#extend
// come through these; disposer() is traced by its lock and unlock.
const about = (redlock) => ({ kind: 'redlock', servers: redlock[kServers].names })
const resourceKeys = (r) => [].concat(r).map(String)
instrument(Redlock.prototype, 'redlock', about, {
  lock: { op: 'acquire', keys: (r, args) => resourceKeys(args[0]), outcome: () => 'granted', after: attemptsOf },
  lockWithOptions: { op: 'acquire', keys: (r, args) => resourceKeys(args[0]), outcome: () => 'granted', after: attemptsOf },
  unlock: { op: 'release', keys: (r, args) => resourceKeys(args[0] && args[0].resource), outcome: () => 'released' },
  extend: { op: 'extend', keys: (r, args) => resourceKeys(args[0] && args[0].resource), outcome: () => 'extended', after: attemptsOf }
})
Redlock.prototype.acquire = Redlock.prototype.lock
Redlock.prototype.acquireWithOptions = Redlock.prototype.lockWithOptions
Redlock.prototype.release = Redlock.prototype.unlock

function attemptsOf (redlock, ctx) {
  if (ctx.result && typeof ctx.result.attempts === 'number') ctx.attempts = ctx.result.attempts
}

module.exports = Redlock
