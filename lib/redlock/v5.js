'use strict'

/**
 * node-redlock 5 (5.0.0-beta.2, `redlock@next`) and its maintained fork
 * @sesamecare-oss/redlock 1.4.0, as one face over the native core: the same
 * class, settings and defaults, methods, errors (`ExecutionError` with its
 * `attempts` of `ExecutionStats`, keyed by the clients you passed), native
 * promises and the `error` event. Each operation is one native call
 * (src/node/ops/redlock.rs): every server at once, each bounded by a server
 * timeout, the retries in Rust, and a lock whose validity is gone never
 * returned.
 */

const crypto = require('crypto')
const { EventEmitter } = require('events')
const { start } = require('../native/bridge')
const { redlockScripts, redlockScriptSet } = require('../native/loader')
const { LockOp, Flag: { Keep: F_KEEP, Votes: F_VOTES, Wake: F_WAKE }, nums } = require('../native/wire')
const { serversFor } = require('../common/servers')
const { retryFields, serverTimeout, RELEASE_TIMEOUT_MS, crossSlot } = require('./attempts')
const { randomHex16 } = require('../common/random')
const keeper = require('../common/keeper')
const { lockLost, nativeMessage } = require('../common/errors')
const holds = require('../common/holds')
const { LockBase } = require('../common/lock-base')
const trace = require('../common/trace')
const { instrument } = trace

const SCRIPTS = redlockScripts(5)

const defaultSettings = Object.freeze({
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500
})

const QUORUM_MESSAGE = 'The operation was unable to achieve a quorum during its retry window.'

/** Another lock holds one or more of the requested resources. */
class ResourceLockedError extends Error {
  constructor (message) {
    super()
    this.message = message
    this.name = 'ResourceLockedError'
  }
}

/** An operation did not achieve a quorum; `attempts` says how each attempt voted. */
class ExecutionError extends Error {
  /** `options.cause`: beyond node-redlock 5, the native failure it wraps. */
  constructor (message, attempts, options) {
    super(undefined, options)
    this.message = message
    this.attempts = attempts
    this.name = 'ExecutionError'
  }
}

/**
 * A lock on `resources`: its random `value`, `expiration` (ms since the
 * epoch; 0 once released or extended). Beyond node-redlock 5, `signal`
 * (lib/common/lock-base.js; its hold kept off the lock's own properties):
 * aborted with a LockLostError when a release or extend could not confirm
 * the lock on a majority, never by a clean release.
 */
class Lock extends LockBase {
  constructor (redlock, resources, value, attempts, expiration, settings) {
    super()
    this.redlock = redlock
    this.resources = resources
    this.value = value
    this.attempts = attempts
    this.expiration = expiration
    this.settings = settings
  }

  async release () {
    return this.redlock.release(this)
  }

  async extend (duration) {
    return this.redlock.extend(this, duration, this.settings)
  }
}

/** Marks `lock` lost as `report` (not granted) says, once, and aborts its signal. */
function loseLock (lock, report) {
  holds.lose(holds.holdOf(lock), holds.lostReason(report), lock.resources.join(','), 'redlock5')
}

// Hidden per-instance state: the servers (in the order of `clients`), the
// client objects by server, and the script set.
const kServers = Symbol('redislock-rs.servers')
const kClients = Symbol('redislock-rs.clients')
const kScriptSet = Symbol('redislock-rs.scriptSet')
const kOwnRelease = Symbol('redislock-rs.ownRelease')

const WAKE_WITH_SCRIPT = 'Redlock setting wakeOnRelease announces releases with a release script of its own; it cannot be combined with a releaseScript transform'

class Redlock extends EventEmitter {
  constructor (clients, settings = {}, scripts = {}) {
    super()
    // As node-redlock 5: an `error` event never crashes the process.
    this.on('error', () => {})
    this.clients = new Set(clients)
    if (this.clients.size === 0) throw new Error('Redlock must be instantiated with at least one redis client.')
    settings = settings || {}
    const pick = (name) => typeof settings[name] === 'number' ? settings[name] : defaultSettings[name]
    this.settings = {
      driftFactor: pick('driftFactor'),
      retryCount: pick('retryCount'),
      retryDelay: pick('retryDelay'),
      retryJitter: pick('retryJitter'),
      automaticExtensionThreshold: pick('automaticExtensionThreshold')
    }
    const db = settings.db
    if (db !== undefined && db !== null) {
      if (!Number.isSafeInteger(db) || db < 0) throw new TypeError(`Redlock setting db must be a non-negative integer; got ${String(db)}`)
      this.settings.db = db
    }
    // Beyond node-redlock 5: a release wakes the waiters at once.
    if (settings.wakeOnRelease !== undefined) {
      if (typeof settings.wakeOnRelease !== 'boolean') throw new TypeError(`Redlock setting wakeOnRelease must be a boolean; got ${typeof settings.wakeOnRelease}`)
      this.settings.wakeOnRelease = settings.wakeOnRelease
    }
    scripts = scripts || {}
    if (typeof scripts.releaseScript === 'function' && this.settings.wakeOnRelease) throw new TypeError(WAKE_WITH_SCRIPT)
    Object.defineProperty(this, kOwnRelease, { value: typeof scripts.releaseScript !== 'function' })
    const script = (name, fallback) => {
      const s = typeof scripts[name] === 'function' ? scripts[name](fallback) : fallback
      if (typeof s !== 'string' || s === '') {
        throw new TypeError(`Redlock script ${name} must be a function that returns the script's text (a non-empty string); it returned ${typeof s}`)
      }
      return s
    }
    const acquireScript = script('acquireScript', SCRIPTS.lock)
    const extendScript = script('extendScript', SCRIPTS.extend)
    const releaseScript = script('releaseScript', SCRIPTS.unlock)
    this.scripts = {
      acquireScript: { value: acquireScript, hash: this._hash(acquireScript) },
      extendScript: { value: extendScript, hash: this._hash(extendScript) },
      releaseScript: { value: releaseScript, hash: this._hash(releaseScript) }
    }
    const list = [...this.clients]
    // sesamecare's `db`: every server on that database.
    const servers = serversFor(list, 'new Redlock(clients)', this.settings.db)
    Object.defineProperty(this, kServers, { value: servers })
    Object.defineProperty(this, kClients, { value: list })
    Object.defineProperty(this, kScriptSet, { value: redlockScriptSet(acquireScript, releaseScript, extendScript) })
  }

  _hash (value) {
    return crypto.createHash('sha1').update(value).digest('hex')
  }

  _random () {
    return randomHex16()
  }

  /** Runs `quit()` on every client that has one (URLs and options have none). */
  async quit () {
    const results = []
    for (const client of this.clients) {
      if (client !== null && typeof client === 'object' && typeof client.quit === 'function') results.push(client.quit())
    }
    await Promise.all(results)
  }

  /** Takes every resource, on a majority of the servers, for `duration` ms. */
  async acquire (resources, duration, settings) {
    checkDuration(duration)
    const value = this._random()
    const s = this._settings(settings)
    const report = await this._run(LockOp.Acquire, resources, value, duration, s)
    if (!report.granted) throw new ExecutionError(QUORUM_MESSAGE, this._attempts(report, resources, LockOp.Acquire))
    return new Lock(this, resources, value, this._attempts(report, resources, LockOp.Acquire), expiration(report), settings)
  }

  /** Deletes the lock wherever it still carries its value; retries until a majority confirms. */
  async release (lock, settings) {
    lock.expiration = 0
    // A lock taken with wakeOnRelease in its own settings announces too.
    const own = lock.settings !== null && typeof lock.settings === 'object' && lock.settings.wakeOnRelease === true
    const s = own ? { ...this._settings(settings), wakeOnRelease: true } : this._settings(settings)
    const report = await this._run(LockOp.Release, lock.resources, lock.value, 0, s)
    const attempts = this._attempts(report, lock.resources, LockOp.Release)
    if (!report.granted) {
      if (lock instanceof Lock) loseLock(lock, report)
      throw new ExecutionError(QUORUM_MESSAGE, attempts)
    }
    return { attempts, start: Date.now() - report.ageMs }
  }

  /** A new Lock for `existing`'s resources and value, `duration` ms from now; `existing` expires (0). */
  async extend (existing, duration, settings) {
    checkDuration(duration)
    if (existing.expiration < Date.now()) throw new ExecutionError('Cannot extend an already-expired lock.', [])
    const s = this._settings(settings)
    const report = await this._run(LockOp.Extend, existing.resources, existing.value, duration, s)
    const attempts = this._attempts(report, existing.resources, LockOp.Extend)
    if (!report.granted) {
      if (existing instanceof Lock) loseLock(existing, report)
      throw new ExecutionError(QUORUM_MESSAGE, attempts)
    }
    existing.expiration = 0
    return new Lock(this, existing.resources, existing.value, attempts, expiration(report), settings)
  }

  /**
   * Runs `routine(signal, context)` with the lock held. The lease keeper
   * renews it on the tokio thread (off the event loop: a blocked loop does
   * not lose it) until the routine ends, while this thread is alive; if it
   * is lost (not renewed in time, gone, or the event loop stalled past
   * max(30 s, 3 × duration)) the signal aborts at once with `signal.error`,
   * a LockLostError. The lock is then released once, without retries (an
   * aborted or lost lock does not spend the retry window), and the
   * routine's own error wins over a release error.
   */
  async using (resources, duration, settingsOrRoutine, optionalRoutine) {
    checkDuration(duration)
    const settings = settingsOrRoutine && typeof settingsOrRoutine !== 'function'
      ? { ...this.settings, ...settingsOrRoutine }
      : this.settings
    const routine = optionalRoutine ?? settingsOrRoutine
    if (typeof routine !== 'function') throw new Error('INVARIANT: routine is not a function.')
    if (settings.automaticExtensionThreshold > duration - 100) {
      throw new Error('A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting.')
    }
    const hold = keeper.holdId()
    const kept = { flags: F_KEEP, hold, env: keeper.envId(), maxLagMs: keeper.lagBound(duration) }
    const value = this._random()
    const report = await this._run(LockOp.Acquire, resources, value, duration, settings, kept)
    const attempts = this._attempts(report, resources, LockOp.Acquire)
    if (!report.granted) throw new ExecutionError(QUORUM_MESSAGE, attempts)
    const lock = new Lock(this, resources, value, attempts, expiration(report), settingsOrRoutine === routine ? undefined : settingsOrRoutine)
    const controller = new AbortController()
    const signal = controller.signal
    const servers = this[kServers]
    const where = { endpoint: servers.endpoints[0], key: servers.prefix + resources[0], token: value }
    keeper.watch(hold, lock, where, (reason) => {
      signal.error = lockLost(reason, resources.join(','))
      trace.lost('redlock5', resources.slice(), reason, signal.error)
      controller.abort(signal.error)
    })
    let failed = false
    try {
      return await routine(signal, { lock, extensions: 0 })
    } catch (err) {
      failed = true
      throw err
    } finally {
      keeper.unwatch(hold)
      lock.expiration = 0
      // One release attempt, the keeper stopped first; a lock not released
      // expires by its TTL.
      const released = this._run(LockOp.Release, resources, value, 0, { ...this.settings, retryCount: 0, wakeOnRelease: settings.wakeOnRelease }, { flags: F_KEEP, hold })
      if (failed) {
        await released.catch(() => {})
      } else {
        const r = await released
        if (!r.granted) throw new ExecutionError(QUORUM_MESSAGE, this._attempts(r, resources, LockOp.Release))
      }
    }
  }

  _settings (settings) {
    return settings ? { ...this.settings, ...settings } : this.settings
  }

  /** One native operation (`extra`: more of its numbers, by slot name); resolves with its report. */
  _run (op, resources, value, duration, s, extra) {
    const keys = keysOf(this, resources)
    let wake = 0
    if (s.wakeOnRelease !== undefined && s.wakeOnRelease !== false) {
      if (s.wakeOnRelease !== true) return Promise.reject(new TypeError(`Redlock setting wakeOnRelease must be a boolean; got ${typeof s.wakeOnRelease}`))
      if (!this[kOwnRelease]) return Promise.reject(new TypeError(WAKE_WITH_SCRIPT))
      if (op !== LockOp.Extend) wake = F_WAKE
    }
    const slots = crossSlot(this[kServers].cluster, keys)
    if (slots !== null) {
      return Promise.reject(new TypeError(`Cannot lock the resources ${JSON.stringify(resources)} together on Redis Cluster: they hash to different slots (${slots}); give them one hash tag, such as {order:42}:a and {order:42}:b`))
    }
    const args = nums({
      time: duration,
      ...retryFields(s.retryCount, s.retryDelay, s.retryJitter, s.driftFactor, defaultSettings.driftFactor),
      serverTimeoutMs: op === LockOp.Release ? RELEASE_TIMEOUT_MS : serverTimeout(duration),
      ...extra,
      flags: F_VOTES | wake | (extra === undefined ? 0 : extra.flags)
    })
    const servers = this[kServers]
    const set = this[kScriptSet]
    return start(settle, this, null, function (id) {
      servers.engine.redlock(servers.endpoints, id, op, set, keys, String(value), args)
    }, Promise)
  }

  /**
   * Every attempt's `ExecutionStats`, as node-redlock 5 gives them: each
   * server's client object voted for, or against with an Error (a
   * ResourceLockedError where another lock holds a resource); every failed
   * vote is also an `error` event, when anyone listens.
   */
  _attempts (report, resources, op) {
    const clients = this[kClients]
    const names = this[kServers].names
    const rounds = report.rounds.length > 0 ? report.rounds : [report.servers]
    return rounds.map((votes) => {
      const stats = {
        membershipSize: clients.length,
        quorumSize: report.quorum,
        votesFor: new Set(),
        votesAgainst: new Map()
      }
      votes.forEach((v, i) => {
        if (v.outcome === 'acquired' || v.outcome === 'extended' || v.outcome === 'released') {
          stats.votesFor.add(clients[i])
          return
        }
        const error = v.outcome === 'held' || v.outcome === 'not-ours'
          ? new ResourceLockedError(`The operation was applied to: 0 of the ${resources.length} requested resources.`)
          : new Error(v.error != null ? v.error : `Redis server ${names[i]} did not answer in time`)
        stats.votesAgainst.set(clients[i], error)
        // Never thrown for want of a listener: observability must not crash.
        if (this.listenerCount('error') > 0) this.emit('error', error)
      })
      return Promise.resolve(stats)
    })
  }
}

/**
 * A native operation's end: its report, or a failure of the operation
 * itself (not a vote: a server's failure is one) as an ExecutionError with
 * no attempts and the native error as its `cause`, as every face wraps
 * native failures in its own class.
 */
function settle (redlock, _, outcome, err, resolve, reject, report) {
  if (err) return reject(new ExecutionError(nativeMessage(err).message, [], { cause: err }))
  resolve(report)
}

function checkDuration (duration) {
  if (Math.floor(duration) !== duration) throw new Error('Duration must be an integer value in milliseconds.')
  if (duration < 1 || duration > Number.MAX_SAFE_INTEGER) throw new RangeError(`Duration must be a positive number of milliseconds; got ${duration}`)
}

/**
 * When the lock's validity ends, on the Date.now() clock: the winning
 * attempt's start + duration − drift, as counted natively (monotonic).
 */
function expiration (report) {
  return Date.now() + report.validityMs
}

function keysOf (redlock, resources) {
  if (!Array.isArray(resources) || resources.length === 0 || !resources.every((r) => typeof r === 'string' && r !== '')) {
    throw new TypeError(`Redlock resources must be a non-empty array of non-empty strings; got ${JSON.stringify(resources)}`)
  }
  const prefix = redlock[kServers].prefix
  return resources.map((r) => prefix + r)
}

// diagnostics_channel (lib/common/trace.js). Lock#release and Lock#extend
// come through these; using() is traced by its own lost-lock report.
instrument(Redlock.prototype, 'redlock5', (r) => ({ kind: 'redlock', servers: r[kServers].names }), {
  acquire: { op: 'acquire', keys: (r, args) => [].concat(args[0]).map(String), outcome: () => 'granted', after: votesOf },
  release: { op: 'release', keys: (r, args) => [].concat(args[0] && args[0].resources).map(String), outcome: () => 'released' },
  extend: { op: 'extend', keys: (r, args) => [].concat(args[0] && args[0].resources).map(String), outcome: () => 'extended', after: votesOf }
})

function votesOf (redlock, ctx) {
  if (ctx.result && Array.isArray(ctx.result.attempts)) ctx.attempts = ctx.result.attempts.length
}

module.exports = { Redlock, Lock, ExecutionError, ResourceLockedError }
