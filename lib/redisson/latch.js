'use strict'

/**
 * Java Redisson's RCountDownLatch (`redisson.getCountDownLatch(name)`), on
 * its data layout: the count is a string at the name (deleted at zero),
 * and `redisson_countdownlatch__channel__{name}` carries 0 (ZERO_COUNT)
 * when it reaches zero and 1 (NEW_COUNT) when a count is set.
 */

const { SyncOp } = require('../native/wire')
const { TimeUnit } = require('./timeunit')
const { SyncObject, integer, millis, settleBool, settleVoid, settleNumber, guarded } = require('./sync-base')
const { checkUnit } = require('./args')

class RCountDownLatch extends SyncObject {
  constructor (redisson, name) {
    super(redisson, name, 'getCountDownLatch')
    this._channel = `redisson_countdownlatch__channel__{${this._key}}`
    this._checkSlots('getCountDownLatch', [this._channel])
  }

  /** Sets the count if there is none (it is zero); `true` when set. */
  trySetCount (count) {
    return guarded(() => {
      const n = integer(count, 'count', 0, Number.MAX_SAFE_INTEGER)
      return this._run(settleBool, null, SyncOp.LatchTrySetCount, '', { permits: n })
    })
  }

  /** One fewer; at zero the latch opens and its waiters wake. */
  countDown () {
    return this._run(settleVoid, null, SyncOp.LatchCountDown, '', {})
  }

  /** The count now (0 when open). */
  getCount () {
    return this._run(settleNumber, null, SyncOp.LatchGetCount, '', {})
  }

  /**
   * Waits until the count is zero, at most `waitTime` (in `unit`; none:
   * forever). `true` when it is zero.
   */
  await (waitTime, unit = TimeUnit.MILLISECONDS) {
    return guarded(() => {
      checkUnit(unit)
      const waitMs = waitTime === undefined ? -1 : millis(waitTime, unit, 'waitTime')
      return this._run(settleBool, null, SyncOp.LatchAwait, '', { waitMs })
    })
  }
}

module.exports = { RCountDownLatch }
