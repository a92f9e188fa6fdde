'use strict'

/**
 * Redlock: `createLock([a, b, c, …], options)` — one lock on several
 * independent Redis servers, with redislock's API (acquire / release /
 * extend, callbacks, Bluebird promises, the three error classes). The
 * algorithm runs in Rust (src/locks/quorum.rs); here are the lock's state and
 * the errors, which say what every server did (`err.servers`).
 */

const { start, rejected } = require('../native/bridge')
const { serversFor } = require('../common/servers')
const { keeperRemaining } = require('../native/loader')
const { CLIENT_KINDS } = require('../common/clients')
const keeper = require('../common/keeper')
const holds = require('../common/holds')
const { LockAcquisitionError, LockReleaseError, LockExtendError, wrapError, extendTimeError } = require('../common/errors')
const { signalOption, abortable } = require('../common/abort')
const {
  TokenLockBase, refuseAcquire, refuseUnheld, markHeld, markFree, kEngine, kEndpoints, kPrefix, kBusy, kHold
} = require('../common/lock-base')

const { LockOp, Flag: { Wake: F_WAKE, Keep: F_KEEP }, nums } = require('../native/wire')
const { instrument, attempts: noteAttempts } = require('../common/trace')
const now = () => performance.now()

// Hidden per-lock state (lib/common/lock-base.js): the shared symbols, and
// this lock's own. The autoExtend option (null: off) and wakeOnRelease.
const kAutoExtend = Symbol('redislock-rs.autoExtend')
const kWake = Symbol('redislock-rs.wake')
// The id of the next hold (the current one is kHold, a holds.newHold()).
const kHoldId = Symbol('redislock-rs.holdId')
// The servers' names for `err.servers`, in the order of kEndpoints.
const kServerNames = Symbol('redislock-rs.serverNames')
// The process's held locks (Lock._acquiredLocks).
const kAcquired = Symbol('redislock-rs.acquired')
// When the validity of the grant or the last extend ends (performance.now).
const kValidUntil = Symbol('redislock-rs.validUntil')

/** How an invalid key is shown in its error (the quorum lock's own wording). */
const quoteKey = (key) => JSON.stringify(String(key))

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
    const entry = { server: lock[kServerNames][i], outcome: s.outcome }
    if (s.error != null) entry.error = s.error
    return entry
  })
  return err
}

function settleAcquire (lock, ctx, outcome, err, resolve, reject, value) {
  lock[kBusy] = false
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
  markHeld(lock, key, lock[kAcquired])
  noteAttempts(lock, r.attempts)
  lock[kValidUntil] = now() + r.validityMs
  const hold = holds.newHold()
  hold.id = lock[kHoldId]
  lock[kHold] = hold
  if (lock[kAutoExtend] !== null) {
    const where = { endpoint: lock[kEndpoints][0], key: lock[kPrefix] + key, token: lock._id }
    keeper.watch(hold.id, lock, where, (reason) => holds.lose(hold, reason, key, 'redislock'))
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
    holds.lose(lock[kHold], holds.lostReason(r), key, 'redislock')
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
    lock[kValidUntil] = now() + r.validityMs
    return resolve()
  }
  forget(lock)
  holds.lose(lock[kHold], holds.lostReason(r), key, 'redislock')
  const n = r.servers.length
  const done = r.servers.filter((s) => s.outcome === 'extended').length
  const msg = done === 0 && r.servers.every((s) => s.outcome === 'not-ours')
    ? `Lock on "${key}" had expired`
    : `Lock on "${key}" could not be extended (extended on ${done} of ${n} servers, needed ${r.quorum}: ${tally(r.servers)}${r.validityMs <= 0 ? `; no validity left: ${r.validityMs} ms` : ''}); it is lost and was released everywhere`
  reject(withServers(new LockExtendError(msg), lock, r))
}

function forget (lock) {
  markFree(lock, lock[kAcquired])
  lock[kValidUntil] = 0
  if (lock[kAutoExtend] !== null && lock[kHold] !== null) keeper.unwatch(lock[kHold].id)
}

function intOption (options, name) {
  const v = options[name]
  if (v === undefined || v === null) return 0
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
    throw new RangeError(`createLock option ${name} must be a positive integer number of milliseconds; got ${String(v)}`)
  }
  return v
}

/**
 * Beyond redislock, as Lock: `signal` (lib/common/lock-base.js; with
 * autoExtend the keeper reports losses as they happen, without it a loss is
 * found by `extend` or `release`) and `await using` (releases if held).
 */
class QuorumLock extends TokenLockBase {
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
    const servers = serversFor(clients, 'createLock([...])')
    if (servers.cluster) {
      throw new TypeError('createLock([...]): a Redis Cluster cannot be one of a quorum\'s independent servers; lock on the cluster itself with createLock(cluster)')
    }
    if (new Set(servers.endpoints).size !== servers.endpoints.length) {
      throw new TypeError('createLock([...]): the same server is listed twice (a quorum needs independent servers)')
    }
    super(clients)
    for (const key in defaults) {
      this[key] = defaults[key]
      if (key in options) this[key] = parseInt(options[key], 10) || 0
    }
    this.serverTimeout = intOption(options, 'serverTimeout')
    this.retryJitter = options.retryJitter === undefined ? 20 : intOption(options, 'retryJitter')
    this[kAutoExtend] = keeper.autoExtendOf(options)
    this[kWake] = wake === true
    this[kHoldId] = 0
    this[kEngine] = servers.engine
    this[kEndpoints] = servers.endpoints
    this[kPrefix] = servers.prefix
    this[kServerNames] = servers.names
    this[kAcquired] = acquired
    this[kValidUntil] = 0
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
    const opt = signalOption(options)
    const refused = refuseAcquire(this, key, opt, quoteKey, fn)
    if (refused !== null) return refused
    const signal = opt.signal
    this[kBusy] = true
    const ae = this[kAutoExtend]
    this[kHoldId] = ae === null ? 0 : keeper.holdId()
    const cancelId = signal === null ? 0 : keeper.cancelId()
    const args = nums({
      time: this.timeout,
      retries: tryOnly ? 0 : this.retries,
      delay: this.delay,
      serverTimeoutMs: this.serverTimeout,
      jitterMs: this.retryJitter,
      flags: this._flags(),
      hold: this[kHoldId],
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
    const refused = refuseUnheld(this, LockReleaseError, fn)
    if (refused !== null) return refused
    const p = this._run(settleRelease, this._key, LockOp.Release, this._nums(this.timeout))
    return fn === undefined ? p : p.nodeify(fn)
  }

  /** Sets the lock's TTL to `time` ms on a majority, within the new validity. */
  extend (time, fn) {
    const bad = extendTimeError(time)
    if (bad !== null) return rejected(bad, fn)
    const refused = refuseUnheld(this, LockExtendError, fn)
    if (refused !== null) return refused
    const p = this._run(settleExtend, this._key, LockOp.Extend, this._nums(time))
    return fn === undefined ? p : p.nodeify(fn)
  }

  /**
   * How long the lock is valid for, in ms (never negative; 0 when not
   * held or lost): with autoExtend, from the keeper's last renewal that a
   * majority confirmed; else from the grant or the last extend.
   */
  validityMs () {
    const hold = this[kHold]
    if (!this._locked || hold === null || hold.lost !== null) return 0
    if (this[kAutoExtend] !== null) {
      return Math.max(0, keeperRemaining(this[kEndpoints][0], this[kPrefix] + this._key, this._id))
    }
    return Math.max(0, Math.floor(this[kValidUntil] - now()))
  }

  /** A release's or extend's numbers: `time` (the lock's TTL; the new TTL). */
  _nums (time) {
    return nums({ time, serverTimeoutMs: this.serverTimeout, flags: this._flags() })
  }

  _flags () {
    return (this[kAutoExtend] === null ? 0 : F_KEEP) | (this[kWake] ? F_WAKE : 0)
  }

  _run (settle, key, op, args) {
    return start(settle, this, key, this._submit(op, key, args))
  }

  /** The submit function of operation `op` on `key` (see lib/native/bridge.js). */
  _submit (op, key, args) {
    const lock = this
    return function (id) {
      lock[kEngine].quorum(lock[kEndpoints], id, op, lock[kPrefix] + key, lock._id, args)
    }
  }
}

// diagnostics_channel (lib/common/trace.js).
instrument(QuorumLock.prototype, 'redislock', (lock) => ({ kind: 'quorum', servers: lock[kServerNames] }), {
  acquire: { op: 'acquire', keys: (lock, args) => [args[0]], outcome: () => 'granted' },
  tryAcquire: { op: 'acquire', keys: (lock, args) => [args[0]], outcome: (got) => got ? 'granted' : 'held' },
  release: { op: 'release', keys: (lock) => [lock._key], outcome: () => 'released' },
  extend: { op: 'extend', keys: (lock) => [lock._key], outcome: () => 'extended' }
})

module.exports = QuorumLock
