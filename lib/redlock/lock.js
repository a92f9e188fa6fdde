'use strict'

/**
 * redlock 4.2.0's `Lock` and `LockError`, with its own properties and
 * prototype: what `redlock.lock()` resolves with and what it rejects with.
 */

const util = require('util')
const holds = require('../common/holds')
const { LockBase } = require('../common/lock-base')

/**
 * redlock 4.2.0's LockError: `name`, `message` and `attempts` (how many
 * attempts were made; undefined for a release) as own properties.
 */
function LockError (message, attempts) {
  Error.call(this)
  Error.captureStackTrace(this, LockError)
  this.name = 'LockError'
  this.message = message || 'Failed to lock the resource.'
  this.attempts = attempts
}

util.inherits(LockError, Error)

/**
 * A lock on one or more resources: `resource` (always an array, as in
 * redlock 4.2.0), its random `value`, `expiration` (ms since the epoch; 0
 * once released), the `attempts` it took and the `attemptsRemaining`.
 */
function Lock (redlock, resource, value, expiration, attempts, attemptsRemaining) {
  this.redlock = redlock
  this.resource = resource
  this.value = value
  this.expiration = expiration
  this.attempts = attempts
  this.attemptsRemaining = attemptsRemaining
}

// On the one lock base (its `signal`), without its constructor: a
// function constructor cannot call a class's, and the base's adds nothing.
Object.setPrototypeOf(Lock.prototype, LockBase.prototype)

Lock.prototype.unlock = function unlock (callback) {
  return this.redlock.unlock(this, callback)
}

Lock.prototype.extend = function extend (ttl, callback) {
  return this.redlock.extend(this, ttl, callback)
}

// Beyond redlock 4.2.0, `signal` (lib/common/lock-base.js; its hold kept
// off the lock's own properties, which stay redlock's): aborted with a
// LockLostError when an extend or unlock could not confirm the lock on a
// majority ('expired' when a majority no longer had it, else
// 'renewal-failed'); never by a clean unlock.

/** Marks `lock` lost as `report` (not granted) says, once, and aborts its signal. */
function loseLock (lock, report) {
  if (lock === null || typeof lock !== 'object') return
  holds.lose(holds.holdOf(lock), holds.lostReason(report), [].concat(lock.resource).join(','), 'redlock')
}

module.exports = { Lock, LockError, loseLock }
