'use strict'

/**
 * Java Redisson's RSemaphore (`redisson.getSemaphore(name)`), on its data
 * layout: the permit count is a string at the name, and a release
 * publishes the new count on `redisson_sc:{name}`. Waiting runs in Rust
 * (src/locks/synchronizers.rs).
 */

const { SyncOp } = require('../native/wire')
const { TimeUnit } = require('./timeunit')
const {
  SyncObject, permitsOf, integer, millis,
  settleBool, settleVoid, settleNumber, guarded, traced, INT_MIN, INT_MAX
} = require('./sync-base')
const { prefixName, checkUnit } = require('./args')
const { instrument } = require('../common/trace')

class RSemaphore extends SyncObject {
  constructor (redisson, name) {
    super(redisson, name, 'getSemaphore')
    this._channel = prefixName('redisson_sc', this._key)
    this._checkSlots('getSemaphore', [this._channel])
  }

  /**
   * Sets the number of permits if none is set yet; `true` when set. With
   * `ttl` (in `unit`, at least 1 ms) the count expires after it (Java's
   * `trySetPermits(permits, timeToLive)`).
   */
  trySetPermits (permits, ttl, unit = TimeUnit.MILLISECONDS) {
    return guarded(() => {
      const n = permitsOf(permits)
      checkUnit(unit)
      const time = ttl === undefined || ttl === null ? 0 : millis(ttl, unit, 'ttl', 1)
      return this._run(settleBool, null, SyncOp.SemTrySetPermits, '', { permits: n, time })
    })
  }

  /** Takes `permits`, waiting as long as it takes. */
  acquire (permits = 1) {
    return guarded(() => {
      const n = permitsOf(permits)
      if (n === 0) return this._closedOr(undefined)
      return this._run(settleVoid, null, SyncOp.SemAcquire, '', { permits: n, waitMs: -1 })
    })
  }

  /**
   * Takes `permits` if they are free, waiting at most `waitTime` (in
   * `unit`; none: one attempt). `true` when taken.
   */
  tryAcquire (permits = 1, waitTime, unit = TimeUnit.MILLISECONDS) {
    return guarded(() => {
      const n = permitsOf(permits)
      checkUnit(unit)
      const waitMs = waitTime === undefined ? 0 : millis(waitTime, unit, 'waitTime')
      if (n === 0) return this._closedOr(true)
      return this._run(settleBool, null, SyncOp.SemAcquire, '', { permits: n, waitMs })
    })
  }

  /** Gives `permits` back (wakes waiters). */
  release (permits = 1) {
    return guarded(() => {
      const n = permitsOf(permits)
      if (n === 0) return this._closedOr(undefined)
      return this._run(settleVoid, null, SyncOp.SemRelease, '', { permits: n })
    })
  }

  /**
   * Gives `permits` back only if the count exists (Java's
   * `releaseIfExists`); `true` when given back. 0 permits: `false`, as Java.
   */
  releaseIfExists (permits = 1) {
    return guarded(() => {
      const n = permitsOf(permits)
      if (n === 0) return this._closedOr(false)
      return this._run(settleBool, null, SyncOp.SemReleaseIfExists, '', { permits: n })
    })
  }

  /** The permits free now (0 when none was ever set). */
  availablePermits () {
    return this._run(settleNumber, null, SyncOp.SemAvailablePermits, '', {})
  }

  /** Adds `permits` to the count (negative: removes them). */
  addPermits (permits) {
    return guarded(() => {
      const n = integer(permits, 'permits', INT_MIN, INT_MAX)
      return this._run(settleVoid, null, SyncOp.SemAddPermits, '', { permits: n })
    })
  }

  /** Takes every free permit; how many there were. */
  drainPermits () {
    return this._run(settleNumber, null, SyncOp.SemDrainPermits, '', {})
  }

  /** `value`, or the closed instance's rejection (no call to make). */
  _closedOr (value) {
    if (this._redisson._closed) return this._run(settleVoid, null, SyncOp.SemAvailablePermits, '', {})
    return Promise.resolve(value)
  }
}

// diagnostics_channel (lib/common/trace.js): taking and giving back permits.
const keys = (sem) => [sem.name]
instrument(RSemaphore.prototype, 'redisson', traced('rsemaphore'), {
  acquire: { op: 'acquire', keys, outcome: () => 'granted' },
  tryAcquire: { op: 'acquire', keys, outcome: (got) => got ? 'granted' : 'held' },
  release: { op: 'release', keys, outcome: () => 'released' }
})

module.exports = { RSemaphore }
