'use strict'

/**
 * Java Redisson's RPermitExpirableSemaphore
 * (`redisson.getPermitExpirableSemaphore(name)`), on its data layout: the
 * free count at the name, the held permits in the sorted set
 * `{name}:timeout` (16 raw bytes each, scored by their expiry in ms since
 * the epoch; 922337203685477: no lease), and `redisson_sc:{name}` for
 * wake-ups. Permit ids are shown as 32 lowercase hex digits. Expired
 * permits go back to the count whenever a script looks (as in Redisson);
 * a waiter also wakes when the earliest lease ends.
 */

const { randomBytes } = require('crypto')
const { SyncOp } = require('../native/wire')
const { RedissonLockError } = require('../common/errors')
const { TimeUnit } = require('./timeunit')
const {
  SyncObject, permitsOf, integer, millis,
  settleBool, settleVoid, settleNumber, guarded, traced, NO, INT_MIN, INT_MAX
} = require('./sync-base')
const { instrument } = require('../common/trace')
const { prefixName, suffixName, isUnit, checkUnit, describe } = require('./args')

const ID = /^[0-9a-fA-F]{32}$/

function checkId (permitId) {
  if (typeof permitId !== 'string') throw new TypeError(`permitId must be a string; got ${describe(permitId)}`)
  if (!ID.test(permitId)) throw new RangeError(`permitId must be 32 hexadecimal digits; got ${describe(permitId)}`)
  return permitId.toLowerCase()
}

/** A lease: none (undefined, null or Java's -1), else positive ms. */
function leaseOf (leaseTime, unit) {
  if (leaseTime === undefined || leaseTime === null || leaseTime === -1 || leaseTime === -1n) return 0
  return millis(leaseTime, unit, 'leaseTime', 1)
}

function settleId (obj, id, outcome, err, resolve, reject) {
  if (err) return reject(obj._wrap(err))
  resolve(outcome === NO ? null : id)
}

function unknownPermit (obj, id) {
  return new RedissonLockError(`Permit with id ${id} has already been released or doesn't exist`, obj._name, obj._redisson._id, '')
}

function settleRelease (obj, id, outcome, err, resolve, reject) {
  if (err) return reject(obj._wrap(err))
  if (outcome === NO) return reject(unknownPermit(obj, id))
  resolve()
}

function settleLease (obj, id, outcome, err, resolve, reject, value) {
  if (err) return reject(obj._wrap(err))
  if (outcome === NO || typeof value !== 'number') return reject(unknownPermit(obj, id))
  resolve(value)
}

class RPermitExpirableSemaphore extends SyncObject {
  constructor (redisson, name) {
    super(redisson, name, 'getPermitExpirableSemaphore')
    this._channel = prefixName('redisson_sc', this._key)
    this._timeout = suffixName(this._key, 'timeout')
    this._checkSlots('getPermitExpirableSemaphore', [this._channel, this._timeout])
  }

  /** Sets the number of permits if none is set yet; `true` when set. */
  trySetPermits (permits) {
    return guarded(() => this._run(settleBool, null, SyncOp.PesTrySetPermits, '', { permits: permitsOf(permits) }))
  }

  /**
   * Takes a permit, waiting as long as it takes; it expires after
   * `leaseTime` (in `unit`; none: never). Resolves to its id.
   */
  acquire (leaseTime, unit = TimeUnit.MILLISECONDS) {
    return guarded(() => {
      checkUnit(unit)
      const time = leaseOf(leaseTime, unit)
      const id = randomBytes(16).toString('hex')
      return this._run(settleId, id, SyncOp.PesAcquire, id, { time, waitMs: -1 })
    })
  }

  /**
   * Takes a permit if one is free, waiting at most `waitTime` (none: one
   * attempt); it expires after `leaseTime` (none: never). Resolves to its
   * id, or `null`. `tryAcquire(waitTime, unit)` works too, as in Java.
   */
  tryAcquire (waitTime, leaseTime, unit = TimeUnit.MILLISECONDS) {
    return guarded(() => {
      if (isUnit(leaseTime) && arguments.length === 2) {
        unit = leaseTime
        leaseTime = undefined
      }
      checkUnit(unit)
      const waitMs = waitTime === undefined || waitTime === null ? 0 : millis(waitTime, unit, 'waitTime')
      const time = leaseOf(leaseTime, unit)
      const id = randomBytes(16).toString('hex')
      return this._run(settleId, id, SyncOp.PesAcquire, id, { time, waitMs })
    })
  }

  /** Gives permit `permitId` back; rejects when it was released already, expired or never existed. */
  release (permitId) {
    return guarded(() => {
      const id = checkId(permitId)
      return this._run(settleRelease, permitId, SyncOp.PesTryRelease, id, {})
    })
  }

  /** Gives permit `permitId` back; `false` when it was released already, expired or never existed. */
  tryRelease (permitId) {
    return guarded(() => {
      const id = checkId(permitId)
      return this._run(settleBool, null, SyncOp.PesTryRelease, id, {})
    })
  }

  /** Permit `permitId` now expires `leaseTime` from now; `false` when it is not held. */
  updateLeaseTime (permitId, leaseTime, unit = TimeUnit.MILLISECONDS) {
    return guarded(() => {
      const id = checkId(permitId)
      checkUnit(unit)
      const time = millis(leaseTime, unit, 'leaseTime', 1)
      return this._run(settleBool, null, SyncOp.PesUpdateLease, id, { time })
    })
  }

  /** The permits free now (expired ones counted back first). */
  availablePermits () {
    return this._run(settleNumber, null, SyncOp.PesAvailablePermits, '', {})
  }

  /** All the permits: free plus held (expired ones counted back first; none set: 0). */
  getPermits () {
    return this._run(settleNumber, null, SyncOp.PesGetPermits, '', {})
  }

  /** The permits held now (expired ones counted back first). */
  acquiredPermits () {
    return this._run(settleNumber, null, SyncOp.PesAcquiredPermits, '', {})
  }

  /**
   * Sets the number of all the permits (free plus held) to `permits`: the
   * free count moves by the difference, and a change is announced.
   */
  setPermits (permits) {
    return guarded(() => this._run(settleVoid, null, SyncOp.PesSetPermits, '', { permits: permitsOf(permits) }))
  }

  /**
   * The ms left of permit `permitId`'s lease (-1: no lease); rejects
   * (`RedissonLockError`) when it was released already, expired or never
   * existed.
   */
  getLeaseTime (permitId) {
    return guarded(() => {
      const id = checkId(permitId)
      return this._run(settleLease, permitId, SyncOp.PesGetLeaseTime, id, {})
    })
  }

  /** Adds `permits` to the free count (negative: removes them). */
  addPermits (permits) {
    return guarded(() => {
      const n = integer(permits, 'permits', INT_MIN, INT_MAX)
      return this._run(settleVoid, null, SyncOp.PesAddPermits, '', { permits: n })
    })
  }
}

// diagnostics_channel (lib/common/trace.js): a permit is a lock with an id;
// its key is the semaphore's name.
const keys = (sem) => [sem.name]
instrument(RPermitExpirableSemaphore.prototype, 'redisson', traced('permit-semaphore'), {
  acquire: { op: 'acquire', keys, outcome: () => 'granted' },
  tryAcquire: { op: 'acquire', keys, outcome: (id) => id === null ? 'held' : 'granted' },
  release: { op: 'release', keys, outcome: () => 'released' },
  tryRelease: { op: 'release', keys, outcome: (done) => done ? 'released' : 'not-held' },
  updateLeaseTime: { op: 'extend', keys, outcome: (done) => done ? 'extended' : 'not-held' }
})

module.exports = { RPermitExpirableSemaphore }
