'use strict'

/**
 * redislock-rs: redislock 1.3.0's API (createLock, setDefaults,
 * getAcquiredLocks and the three error classes) over a Rust core, and what
 * goes beyond it (using, inspect, LockLostError; the createLock options
 * autoExtend, fencing and wakeOnRelease).
 */

module.exports = require('./lib/redislock')
