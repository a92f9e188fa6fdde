'use strict'

/**
 * The redislock face: what index.js at the root exports (see there), and
 * the two module-level functions, setDefaults and getAcquiredLocks.
 */

const Lock = require('./lock')
const errors = require('../common/errors')
const { createLock } = require('./create')
const { using, inspect } = require('./using')
const { viaClient } = require('../common/relay')

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
  viaClient,
  LockAcquisitionError: errors.LockAcquisitionError,
  LockReleaseError: errors.LockReleaseError,
  LockExtendError: errors.LockExtendError,
  LockLostError: errors.LockLostError
}
