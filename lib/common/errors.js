'use strict'

/**
 * The three error classes of redislock, on one small base class.
 *
 * As in redislock 1.3.0, `name` and `message` are own enumerable properties
 * (so `Object.keys(err)` and `JSON.stringify(err)` show them) and the stack
 * starts with `Name: message`. A wrapped Redis or connection error is kept as
 * `cause`.
 */
class LockError extends Error {
  constructor (message, options) {
    super(undefined, options)
    this.name = new.target.name
    Object.defineProperty(this, 'message', { value: String(message), enumerable: true, writable: true, configurable: true })
    Error.captureStackTrace(this, new.target)
  }
}

class LockAcquisitionError extends LockError {}
class LockReleaseError extends LockError {}
class LockExtendError extends LockError {}

/**
 * The message and code of a failure from the native layer (or anything
 * else thrown): the native side's errors carry the core's code as
 * `err.code` (`ERR_REDIS_TIMEOUT`, …: src/error.rs). Returns
 * `{ message, code }` (`code` undefined for an error without such a code).
 */
function nativeMessage (err) {
  const message = err && typeof err.message === 'string' ? err.message : String(err)
  const code = err && typeof err.code === 'string' && err.code.startsWith('ERR_') ? err.code : undefined
  return { message, code }
}

/**
 * Wraps a failure from the native layer (or anything else thrown) in the
 * lock error class `ErrorClass`, keeping the original as `cause`.
 */
function wrapError (err, ErrorClass) {
  if (err instanceof ErrorClass) return err
  return new ErrorClass(nativeMessage(err).message, { cause: err })
}

/**
 * A held lock was lost: `lock.signal.reason`. `reason` says how: 'expired'
 * (the key is gone), 'taken' (it carries another owner), 'renewal-failed'
 * (Redis did not confirm a renewal before the lease ran out), 'max-hold'
 * (the hold reached `maxHoldMs`) or 'event-loop-stalled' (the event loop
 * did not answer the keeper within `maxEventLoopLagMs`).
 */
class LockLostError extends LockError {
  constructor (message, reason, key, options) {
    super(message, options)
    this.reason = reason
    this.key = key
  }
}

const LOST_MESSAGES = {
  expired: 'the key expired or was deleted',
  taken: 'the key now carries another owner\'s token',
  'renewal-failed': 'Redis did not confirm a renewal before the lease ran out',
  'max-hold': 'the hold reached maxHoldMs, so renewal stopped',
  'event-loop-stalled': 'the event loop did not answer the lease keeper within maxEventLoopLagMs, so renewal stopped'
}

/** The LockLostError for `key` lost for `reason`. */
function lockLost (reason, key) {
  return new LockLostError(`Lock on "${key}" was lost: ${LOST_MESSAGES[reason] || reason}`, reason, key)
}

/**
 * The LockExtendError for an unusable `extend(time)` argument, or null:
 * redislock's message for anything but a non-zero integer, and why for an
 * integer out of range.
 */
function extendTimeError (time) {
  if (typeof time !== 'number' || !time || time !== parseInt(time, 10)) {
    return new LockExtendError('Int time is required to extend lock')
  }
  if (time < 0 || time > Number.MAX_SAFE_INTEGER) {
    return new LockExtendError(`Int time is required to extend lock: ${time} is not a positive number of milliseconds`)
  }
  return null
}

module.exports = { LockError, LockAcquisitionError, LockReleaseError, LockExtendError, LockLostError, lockLost, wrapError, nativeMessage, extendTimeError }

/**
 * node-redisson's RedissonLockError (which it throws but does not export):
 * the message is followed by a JSON line naming the lock, the Redisson
 * instance and the client. A Redis failure is kept as `cause`.
 */
class RedissonLockError extends Error {
  constructor (message, lockName, nodeId, clientId, options) {
    super(`${message}\n${JSON.stringify({ lockName, nodeId, clientId })}`, options)
    this.lockName = lockName
    this.nodeId = nodeId
    this.clientId = clientId
  }
}

module.exports.RedissonLockError = RedissonLockError
