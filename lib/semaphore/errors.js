'use strict'

/**
 * redis-semaphore's two errors, as it declares them: plain subclasses of
 * Error that set no `name` of their own (so `err.name` is 'Error', as
 * theirs; `instanceof` and `constructor.name` tell them apart).
 */

class LostLockError extends Error {}

class TimeoutError extends Error {}

module.exports = { LostLockError, TimeoutError }
