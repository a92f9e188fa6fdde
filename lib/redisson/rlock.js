'use strict'

/**
 * node-redisson 1.0.4's reentrant lock (`redisson.getLock(name, clientId)`)
 * over the native core: one native call per operation. Waiting, wake-ups on
 * release and the watchdog's renewals run in Rust (src/locks/reentrant.rs,
 * src/waiting/wakeups.rs, src/keeper.rs); here are node-redisson's argument rules,
 * names and errors.
 */

const { randomUUID } = require('crypto')
const { start } = require('../native/bridge')
const { keySlot, endpointName } = require('../native/loader')
const keeper = require('../common/keeper')
const { RedissonLockError, nativeMessage } = require('../common/errors')
const { newHold, lose } = require('../common/holds')
const { LockBase, kHold, kSignalBeforeHold } = require('../common/lock-base')
const { TimeUnit } = require('./timeunit')
const { nodePrefixName, prefixName, describe, checkUnit, millis } = require('./args')

const { RedissonOp: { TryLock: TRY_LOCK, Unlock: UNLOCK, ForceUnlock: FORCE_UNLOCK, IsLocked: IS_LOCKED }, Outcome, nums } = require('../native/wire')
const { instrument, attempts: noteAttempts } = require('../common/trace')
// An unlock that released the last hold answers with a value (src/node/ops/redisson.rs).
const RELEASED = Outcome.Value
const NO = Outcome.No

// Hidden per-lock state (lib/common/lock-base.js; the current or last hold
// is kHold). Public, as in node-redisson, stays `_clientId`. The Redisson
// instance, the lock's name, the lease of the next watchdog-less unlock.
const kRedisson = Symbol('redislock-rs.redisson')
const kName = Symbol('redislock-rs.name')
const kLeaseMs = Symbol('redislock-rs.leaseMs')
// The lock's Redis key, its channel, and this client's field in the hash.
const kLockKey = Symbol('redislock-rs.lockKey')
const kChannel = Symbol('redislock-rs.channel')
const kField = Symbol('redislock-rs.field')
// Unlock latches' names (each unlock adds `:<uuid>`).
const kLatch = Symbol('redislock-rs.latch')
// The numbers of an operation that takes none but the flavour.
const kBare = Symbol('redislock-rs.bare')
// This owner's entry in `watched`.
const kWatchKey = Symbol('redislock-rs.watchKey')
// Which hash lock (Flavor).
const kFlavor = Symbol('redislock-rs.flavor')
// Successful locks minus unlocks through this object.
const kCount = Symbol('redislock-rs.count')

// Which of Redisson's hash locks an RLock is (src/locks/reentrant.rs
// `Flavor`): node-redisson's getLock, a read or write lock of
// getReadWriteLock, a fair lock. The three beyond node-redisson follow
// Java Redisson's names and channels.
const Flavor = Object.freeze({ PLAIN: 0, READ: 1, WRITE: 2, FAIR: 3 })
const CHANNELS = ['redisson_lock__channel', 'redisson_rwlock', 'redisson_rwlock', 'redisson_lock__channel']
const KINDS = ['rlock', 'read-lock', 'write-lock', 'fair-lock']
const GETTERS = ['getLock', 'getReadWriteLock', 'getReadWriteLock', 'getFairLock']

/**
 * The name `what:{name}` beside a lock of `flavor`: node-redisson prefixes
 * its names as ioredis's keyPrefix does; the locks beyond it treat the
 * prefixed name as Java's raw name, so that every name derived from it
 * shares its hash slot.
 */
function besideName (flavor, prefix, what, name) {
  return flavor === Flavor.PLAIN ? prefix + nodePrefixName(what, name) : prefixName(what, prefix + name)
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

// Watchdog holds by `<endpoint>\n<key>\n<field>`: { id, holds: Set } — the
// keeper keeps one lease per owner field, whichever RLock objects took it.
const watched = new Map()

function settleTryLock (lock, ctx, outcome, err, resolve, reject, attempts) {
  if (err) return reject(lock._wrap(err))
  // Held: the attempts it took (src/node/ops/redisson.rs).
  const held = outcome !== NO
  if (held) {
    noteAttempts(lock, attempts)
    // node-redisson: a fixed lease becomes the lease of later unlocks.
    if (ctx.lease !== null) lock[kLeaseMs] = ctx.lease
    if (lock[kCount]++ === 0) lock[kHold] = newHold()
    if (ctx.watch !== null) {
      const w = ctx.watch
      if (!watched.has(w.key)) watched.set(w.key, w)
      w.holds.add(lock[kHold])
      keeper.watch(w.id, lock, null, function (reason) {
        watched.delete(w.key)
        for (const h of w.holds) lose(h, reason, lock[kName], 'redisson')
      })
    }
  }
  resolve(held)
}

/** This object's holds are over (released, or found not ours). */
function endHolds (lock, lostReason) {
  lock[kCount] = 0
  const w = watched.get(lock[kWatchKey])
  if (w !== undefined) {
    w.holds.delete(lock[kHold])
    if (w.holds.size === 0 || lostReason === null) {
      watched.delete(lock[kWatchKey])
      keeper.unwatch(w.id)
    }
  }
  if (lostReason !== null && lock[kHold] !== null) lose(lock[kHold], lostReason, lock[kName], 'redisson')
}

function settleUnlock (lock, _, outcome, err, resolve, reject) {
  if (err) return reject(lock._wrap(err))
  if (outcome === NO) {
    if (lock[kCount] > 0) endHolds(lock, 'expired')
    return reject(new RedissonLockError('attempt to unlock lock, not locked by current client', lock[kName], lock[kRedisson]._id, lock._clientId))
  }
  if (outcome === RELEASED) {
    lock[kLeaseMs] = lock[kRedisson]._watchdogMs
    endHolds(lock, null)
  } else if (lock[kCount] > 0) {
    lock[kCount]--
  }
  resolve()
}

function settleForce (lock, _, outcome, err, resolve, reject) {
  if (err) return reject(lock._wrap(err))
  if (outcome !== NO && lock[kCount] > 0) endHolds(lock, null)
  resolve(outcome !== NO)
}

function settleBool (lock, _, outcome, err, resolve, reject) {
  if (err) return reject(lock._wrap(err))
  resolve(outcome !== NO)
}

/**
 * Beyond node-redisson: `signal` (lib/common/lock-base.js), for this
 * object's holds. A hold is lost when the watchdog finds the lock gone or
 * another's, cannot renew it in time, or the event loop stalls past
 * max(30 s, 3 × lockWatchdogTimeout); or when an unlock finds it not ours.
 */
class RLock extends LockBase {
  constructor (redisson, name, clientId, flavor = Flavor.PLAIN) {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError(`${GETTERS[flavor]}(name): name must be a non-empty string; got ${describe(name)}`)
    }
    if (clientId !== undefined && clientId !== null && (typeof clientId !== 'string' || clientId === '')) {
      throw new TypeError(`${GETTERS[flavor]}(name, clientId): clientId must be a non-empty string; got ${describe(clientId)}`)
    }
    super()
    this[kHold] = null
    this[kRedisson] = redisson
    this[kName] = name
    this._clientId = clientId ?? randomUUID()
    this[kLeaseMs] = redisson._watchdogMs
    const prefix = redisson._target.prefix
    this[kFlavor] = flavor
    this[kLockKey] = prefix + name
    this[kChannel] = besideName(flavor, prefix, CHANNELS[flavor], name)
    this[kLatch] = besideName(flavor, prefix, 'redisson_unlock_latch', name)
    this[kBare] = Object.freeze({ flavor })
    this[kField] = `${redisson._id}:${this._clientId}`
    this[kWatchKey] = `${redisson._target.endpoint}\n${this[kLockKey]}\n${this[kField]}\n${flavor}`
    if (redisson._target.cluster && keySlot(this[kLockKey]) !== keySlot(this[kChannel])) {
      // The unlock script touches the lock, its channel and its latch: on a
      // cluster they must share a slot, or every unlock fails (CROSSSLOT)
      // and the lock is stuck until its lease ends.
      throw new TypeError(`${GETTERS[flavor]}(name): on Redis Cluster the lock ${JSON.stringify(name)} and its channel ${JSON.stringify(this[kChannel])} would hash to different slots, so its unlock would fail; use a name that starts with a hash tag, such as ${JSON.stringify(`{${name}}`)}`)
    }
    this[kCount] = 0
  }

  get name () {
    return this[kName]
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
    const fields = { time: lease === null ? this[kLeaseMs] : lease, waitMs: wait, flavor: this[kFlavor] }
    if (this[kFlavor] === Flavor.FAIR) fields.waiterTimeoutMs = this[kRedisson]._fairWaitMs
    let watch = null
    if (lease === null) {
      // The watchdog: this hold's id, its environment, the longest event-loop lag.
      watch = watched.get(this[kWatchKey]) || { key: this[kWatchKey], id: keeper.holdId(), holds: new Set() }
      fields.hold = watch.id
      fields.env = keeper.envId()
      fields.maxLagMs = keeper.lagBound(this[kRedisson]._watchdogMs)
    }
    let undo = ''
    const replicas = this[kRedisson]._replicas
    if (replicas !== null) {
      // An unacknowledged grant is given back as an unlock, under its own latch.
      fields.replicas = replicas[0]
      fields.replicaTimeoutMs = replicas[1]
      undo = this._latch()
    }
    return this._run(settleTryLock, { lease, watch }, TRY_LOCK, undo, fields)
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
    return this._run(settleUnlock, null, UNLOCK, this._latch(), { time: this[kLeaseMs], flavor: this[kFlavor] })
  }

  /** A fresh unlock latch's name (node-redisson's, in the lock's slot). */
  _latch () {
    return `${this[kLatch]}:${randomUUID()}`
  }

  /** Deletes the lock whoever holds it; `true` when there was one. */
  forceUnlock () {
    return this._run(settleForce, null, FORCE_UNLOCK, '', this[kBare])
  }

  /** Whether anyone holds the lock. */
  isLocked () {
    return this._run(settleBool, null, IS_LOCKED, '', this[kBare])
  }

  /** Operation `op` with latch `aux` and `fields` (lib/native/wire.js `nums`). */
  _run (settle, extra, op, aux, fields) {
    const r = this[kRedisson]
    if (r._closed) {
      return Promise.reject(new RedissonLockError('this Redisson instance has been closed by quit()', this[kName], r._id, this._clientId))
    }
    const lock = this
    const t = r._target
    const args = nums(fields)
    return start(settle, this, extra, function (id) {
      // Java Redisson's locks announce on pub/sub only.
      t.engine.redisson(t.endpoint, id, op, lock[kLockKey], lock[kChannel], lock[kField], aux, lock[kFlavor] === Flavor.PLAIN ? r._adapter : 'pubsub', args)
    }, Promise)
  }

  _wrap (err) {
    if (err instanceof RedissonLockError) return err
    const { message, code } = nativeMessage(err)
    const e = new RedissonLockError(message, this[kName], this[kRedisson]._id, this._clientId, { cause: err })
    if (code) e.code = code
    return e
  }
}

// As the redislock face's: null before the first lock().
RLock.prototype[kSignalBeforeHold] = false

/** `quit()`: the instance's watchdog holds are no longer watched. */
function forgetInstance (id) {
  for (const [key, w] of watched) {
    if (key.includes(`\n${id}:`)) {
      watched.delete(key)
      keeper.unwatch(w.id)
    }
  }
}

// diagnostics_channel (lib/common/trace.js); lock() is traced as its tryLock.
instrument(RLock.prototype, 'redisson', (lock) => ({ kind: KINDS[lock[kFlavor]], servers: [endpointName(lock[kRedisson]._target.endpoint)] }), {
  tryLock: { op: 'acquire', keys: (lock) => [lock[kName]], outcome: (got) => got ? 'granted' : 'held' },
  unlock: { op: 'release', keys: (lock) => [lock[kName]], outcome: () => 'released' },
  forceUnlock: { op: 'release', keys: (lock) => [lock[kName]], outcome: (done) => done ? 'released' : 'not-held' }
})

module.exports = { RLock, Flavor, forgetInstance }
