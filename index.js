'use strict'

/**
 * redislock-rs: redislock 1.3.0's API (createLock, setDefaults,
 * getAcquiredLocks and the three error classes) over a Rust core, and what
 * goes beyond it (using, inspect, LockLostError; the createLock options
 * autoExtend, fencing and wakeOnRelease).
 */

const Lock = require('./lib/redislock/lock')
const errors = require('./lib/common/errors')
const { createLock } = require('./lib/redislock/create')
const { using, inspect } = require('./lib/redislock/using')

/**
 * Sets the defaults used by locks created afterwards. Only `timeout`,
 * `retries` and `delay` are read; null and undefined values are ignored.
 */
function setDefaults (options) {
  options = options || {}
  for (const key in Lock._defaults) {
    if (options[key] !== null && options[key] !== undefined) {
      Lock._defaults[key] = parseInt(options[key], 10)
    }
  }
}

/** The locks this process currently holds. */
function getAcquiredLocks () {
  return Array.from(Lock._acquiredLocks.values())
}

module.exports = {
  createLock,
  setDefaults,
  getAcquiredLocks,
  using,
  inspect,
  LockAcquisitionError: errors.LockAcquisitionError,
  LockReleaseError: errors.LockReleaseError,
  LockExtendError: errors.LockExtendError,
  LockLostError: errors.LockLostError
}
