'use strict'

/**
 * Redlock: `createLock([a, b, c, …], options)` — one lock on several
 * independent Redis servers, with redislock's API (acquire / release /
 * extend, callbacks, Bluebird promises, the three error classes). The
 * algorithm runs in Rust (src/locks/quorum.rs); here are the lock's state and
 * the errors, which say what every server did (`err.servers`).
 */

const { randomUUID } = require('crypto')
const Promise = require('bluebird')
const { start, rejected } = require('../native/bridge')
const { targetFor } = require('../common/targets')
const { endpointName, keeperRemaining } = require('../native/loader')
const { CLIENT_KINDS } = require('../common/clients')
const keeper = require('../common/keeper')
const holds = require('../common/holds')
const { LockAcquisitionError, LockReleaseError, LockExtendError, wrapError, extendTimeError } = require('../common/errors')
const { signalOption, abortedError, abortable } = require('../common/abort')

const { LockOp, Flag: { Wake: F_WAKE, Keep: F_KEEP }, nums } = require('../native/wire')
const now = () => performance.now()

// Each operation's value is the native report (src/node/wire/done.rs
// `QuorumReport`): { granted, validityMs, attempts, quorum (how many servers
// are a majority), servers: [{ outcome, error? }] }.

/** "2 acquired, 3 held by another owner" */
function tally (servers) {
  const words = {
    acquired: 'acquired',
    held: 'held by another owner',
    released: 'released',
    extended: 'extended',
    'not-ours': 'not ours (expired or taken)',
    timeout: 'timed out',
    unreachable: 'unreachable',
    error: 'failed'
  }
  const counts = new Map()
  for (const s of servers) counts.set(s.outcome, (counts.get(s.outcome) || 0) + 1)
  return [...counts].map(([o, n]) => `${n} ${words[o] || o}`).join(', ')
}

function withServers (err, lock, report) {
  err.servers = report.servers.map((s, i) => {
    const entry = { server: lock._serverNames[i], outcome: s.outcome }
    if (s.error != null) entry.error = s.error
    return entry
  })
  return err
}

function settleAcquire (lock, ctx, outcome, err, resolve, reject, value) {
  lock._busy = false
  const key = ctx.key
  if (ctx.signal !== null) ctx.signal.removeEventListener('abort', ctx.onAbort)
  if (err) return reject(wrapError(err, LockAcquisitionError))
  const r = value
  const n = r.servers.length
  const need = r.quorum
  if (ctx.aborted !== null) {
    // Aborted while the winning attempt was in flight: give it back.
    if (r.granted) start(quietly, lock, key, lock._submit(LockOp.Release, key, lock._nums(lock.timeout)))
    return reject(ctx.aborted)
  }
  if (!r.granted) {
    if (ctx.tryOnly && r.servers.filter((s) => s.outcome === 'held').length > n - need) return resolve(false)
    const got = r.servers.filter((s) => s.outcome === 'acquired').length
    const why = got >= need
      ? `acquired on ${got} of ${n} servers, but no validity was left (${r.validityMs} ms: timeout ${lock.timeout} ms − time spent − drift)`
      : `acquired on ${got} of ${n} servers, needed ${need}: ${tally(r.servers)}`
    const tries = r.attempts > 1 ? ` after ${r.attempts} attempts` : ''
    return reject(withServers(new LockAcquisitionError(`Could not acquire lock on "${key}"${tries}: ${why}`), lock, r))
  }
  lock._locked = true
  lock._key = key
  lock._validUntil = now() + r.validityMs
  lock._acquired.set(lock._id, lock)
  const hold = holds.newHold()
  hold.id = lock._holdId
  lock._hold = hold
  if (lock._autoExtend !== null) {
    const where = { endpoint: lock._endpoints[0], key: lock._prefix + key, token: lock._id }
    keeper.watch(hold.id, lock, where, (reason) => holds.lose(hold, reason, key))
  }
  resolve(ctx.tryOnly ? true : undefined)
}

function quietly () {}

function settleRelease (lock, key, outcome, err, resolve, reject, value) {
  if (err) return reject(wrapError(err, LockReleaseError))
  forget(lock)
  const r = value
  if (!r.granted) {
    const n = r.servers.length
    const done = r.servers.filter((s) => s.outcome === 'released').length
    holds.lose(lock._hold, lostReason(r), key)
    const msg = done === 0 && r.servers.every((s) => s.outcome === 'not-ours')
      ? `Lock on "${key}" had expired`
      : `Lock on "${key}" was released on ${done} of ${n} servers, needed ${r.quorum}: ${tally(r.servers)} (the rest expire by their TTL)`
    return reject(withServers(new LockReleaseError(msg), lock, r))
  }
  resolve()
}

function settleExtend (lock, key, outcome, err, resolve, reject, value) {
  if (err) return reject(wrapError(err, LockExtendError))
  const r = value
  if (r.granted) {
    lock._validUntil = now() + r.validityMs
    return resolve()
  }
  forget(lock)
  holds.lose(lock._hold, lostReason(r), key)
  const n = r.servers.length
  const done = r.servers.filter((s) => s.outcome === 'extended').length
  const msg = done === 0 && r.servers.every((s) => s.outcome === 'not-ours')
    ? `Lock on "${key}" had expired`
    : `Lock on "${key}" could not be extended (extended on ${done} of ${n} servers, needed ${r.quorum}: ${tally(r.servers)}${r.validityMs <= 0 ? `; no validity left: ${r.validityMs} ms` : ''}); it is lost and was released everywhere`
  reject(withServers(new LockExtendError(msg), lock, r))
}

/** Why a failed release or extend lost the lock: gone on a majority, or not confirmed. */
function lostReason (report) {
  const notOurs = report.servers.filter((s) => s.outcome === 'not-ours').length
  return notOurs > report.servers.length - report.quorum ? 'expired' : 'renewal-failed'
}

function forget (lock) {
  lock._locked = false
  lock._key = null
  lock._validUntil = 0
  lock._acquired.delete(lock._id)
  if (lock._autoExtend !== null && lock._hold !== null) keeper.unwatch(lock._hold.id)
}

function intOption (options, name) {
  const v = options[name]
  if (v === undefined || v === null) return 0
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
    throw new RangeError(`createLock option ${name} must be a positive integer number of milliseconds; got ${String(v)}`)
  }
  return v
}

class QuorumLock {
  /**
   * @param clients  an array of what createLock takes, one per server
   * @param options  {timeout, retries, delay, serverTimeout, retryJitter}
   * @param defaults redislock's defaults (Lock._defaults)
   * @param acquired the process's held locks (Lock._acquiredLocks)
   */
  constructor (clients, options, defaults, acquired) {
    if (clients.length === 0) throw new TypeError(`createLock expects ${CLIENT_KINDS}, or a non-empty array of them (one per independent server); got an empty array`)
    if (options !== undefined && options !== null && typeof options !== 'object') {
      throw new TypeError(`createLock options must be an object; got ${typeof options}`)
    }
    options = options || {}
    if (options.fencing !== undefined && options.fencing !== false && options.fencing !== null) {
      throw new TypeError('createLock([...], { fencing }) is refused: independent servers share no counter, so no fencing token can be strictly increasing across them; use one Redis (or Redis Cluster) for fenced locks')
    }
    const wake = options.wakeOnRelease
    if (wake !== undefined && wake !== null && typeof wake !== 'boolean') {
      throw new TypeError(`createLock option wakeOnRelease must be true or false; got ${typeof wake}`)
    }
    const targets = clients.map((c, i) => targetFor(c, `createLock([...]) server ${i}`))
    if (targets.some((t) => t.cluster)) {
      throw new TypeError('createLock([...]): a Redis Cluster cannot be one of a quorum\'s independent servers; lock on the cluster itself with createLock(cluster)')
    }
    const prefixes = new Set(targets.map((t) => t.prefix))
    if (prefixes.size > 1) throw new TypeError('createLock([...]): every server\'s client must have the same key prefix')
    if (new Set(targets.map((t) => t.endpoint)).size !== targets.length) {
      throw new TypeError('createLock([...]): the same server is listed twice (a quorum needs independent servers)')
    }
    this._id = randomUUID()
    this._locked = false
    this._key = null
    this._client = clients
    for (const key in defaults) {
      this[key] = defaults[key]
      if (key in options) this[key] = parseInt(options[key], 10) || 0
    }
    this.serverTimeout = intOption(options, 'serverTimeout')
    this.retryJitter = options.retryJitter === undefined ? 20 : intOption(options, 'retryJitter')
    const autoExtend = keeper.autoExtendOf(options)
    Object.defineProperties(this, {
      _autoExtend: { value: autoExtend },
      _wake: { value: wake === true },
      // The current (or last) hold (lib/common/holds.js) and the next one's id.
      _hold: { value: null, writable: true },
      _holdId: { value: 0, writable: true },
      _engine: { value: targets[0].engine },
      _endpoints: { value: targets.map((t) => t.endpoint) },
      _prefix: { value: targets[0].prefix },
      _serverNames: { value: targets.map((t) => endpointName(t.endpoint)) },
      _acquired: { value: acquired },
      _busy: { value: false, writable: true },
      _validUntil: { value: 0, writable: true }
    })
  }

  /**
   * Takes the lock on a majority of the servers (see src/locks/quorum.rs).
   * `options` (in place of the callback, which may follow it): `{ signal }`,
   * an AbortSignal that ends the wait at once.
   */
  acquire (key, options, fn) {
    if (typeof options === 'function') {
      fn = options
      options = undefined
    }
    return this._acquire(key, options, typeof fn === 'function' ? fn : undefined, false)
  }

  /**
   * Exactly one attempt: resolves `true` when granted, `false` when other
   * owners hold it on so many servers that no majority could be had;
   * rejects (LockAcquisitionError, with `servers`) for anything else.
   */
  tryAcquire (key, options) {
    return this._acquire(key, options, undefined, true)
  }

  _acquire (key, options, fn, tryOnly) {
    const { signal, error } = signalOption(options)
    if (error !== undefined) return rejected(error, fn)
    if (this._locked || this._busy) return rejected(new LockAcquisitionError('Lock already held'), fn)
    if (typeof key !== 'string' || key === '') {
      return rejected(new LockAcquisitionError(`Invalid lock key ${JSON.stringify(String(key))}: the key must be a non-empty string`), fn)
    }
    if (signal !== null && signal.aborted) return rejected(abortedError(key, signal), fn)
    this._busy = true
    const ae = this._autoExtend
    this._holdId = ae === null ? 0 : keeper.holdId()
    const cancelId = signal === null ? 0 : keeper.cancelId()
    const args = nums({
      time: this.timeout,
      retries: tryOnly ? 0 : this.retries,
      delay: this.delay,
      serverTimeoutMs: this.serverTimeout,
      jitterMs: this.retryJitter,
      flags: this._flags(),
      hold: this._holdId,
      env: keeper.envId(),
      maxLagMs: keeper.maxLagMs(ae, this.timeout),
      maxHoldMs: ae === null ? 0 : (ae.maxHoldMs || 0),
      cancel: cancelId
    })
    const ctx = { key, signal, onAbort: null, aborted: null, tryOnly }
    let p = start(settleAcquire, this, ctx, this._submit(LockOp.Acquire, key, args))
    if (signal !== null) p = abortable(p, signal, ctx, key, cancelId)
    return fn === undefined ? p : p.nodeify(fn)
  }

  /** Deletes the lock on every server where it is still ours. */
  release (fn) {
    if (!this._locked) return rejected(new LockReleaseError('Lock has not been acquired'), fn)
    const p = this._run(settleRelease, this._key, LockOp.Release, this._nums(this.timeout))
    return fn === undefined ? p : p.nodeify(fn)
  }

  /** Sets the lock's TTL to `time` ms on a majority, within the new validity. */
  extend (time, fn) {
    const bad = extendTimeError(time)
    if (bad !== null) return rejected(bad, fn)
    if (!this._locked) return rejected(new LockExtendError('Lock has not been acquired'), fn)
    const p = this._run(settleExtend, this._key, LockOp.Extend, this._nums(time))
    return fn === undefined ? p : p.nodeify(fn)
  }

  /**
   * How long the lock is valid for, in ms (never negative; 0 when not
   * held or lost): with autoExtend, from the keeper's last renewal that a
   * majority confirmed; else from the grant or the last extend.
   */
  validityMs () {
    if (!this._locked || this._hold === null || this._hold.lost !== null) return 0
    if (this._autoExtend !== null) {
      return Math.max(0, keeperRemaining(this._endpoints[0], this._prefix + this._key, this._id))
    }
    return Math.max(0, Math.floor(this._validUntil - now()))
  }

  /**
   * An AbortSignal for the current (or last) acquisition, aborted with a
   * LockLostError when that hold is lost; null before the first.
   */
  get signal () {
    return holds.signalOf(this._hold)
  }

  /** Releases the lock if it is held (`await using lock = …`). */
  [Symbol.asyncDispose] () {
    return this._locked ? this.release() : Promise.resolve()
  }

  /** A release's or extend's numbers: `time` (the lock's TTL; the new TTL). */
  _nums (time) {
    return nums({ time, serverTimeoutMs: this.serverTimeout, flags: this._flags() })
  }

  _flags () {
    return (this._autoExtend === null ? 0 : F_KEEP) | (this._wake ? F_WAKE : 0)
  }

  _run (settle, key, op, nums) {
    return start(settle, this, key, this._submit(op, key, nums))
  }

  /** The submit function of operation `op` on `key` (see lib/native/bridge.js). */
  _submit (op, key, nums) {
    const lock = this
    return function (id) {
      lock._engine.quorum(lock._endpoints, id, op, lock._prefix + key, lock._id, nums)
    }
  }
}

module.exports = QuorumLock
