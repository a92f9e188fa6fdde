'use strict'

/**
 * redislock-rs/semaphore: a drop-in for redis-semaphore 5.8's mutexes and
 * semaphores (`Mutex`, `Semaphore`, `MultiSemaphore`, their Redlock
 * variants over independent servers,
 * `LostLockError`, `TimeoutError`, `defaultTimeoutOptions`).
 */

const face = require('./lib/semaphore')

Object.defineProperty(exports, '__esModule', { value: true })
Object.defineProperty(exports, 'defaultTimeoutOptions', { enumerable: true, get: () => face.defaultTimeoutOptions })
exports.Mutex = face.Mutex
exports.Semaphore = face.Semaphore
exports.MultiSemaphore = face.MultiSemaphore
exports.RedlockMutex = face.RedlockMutex
exports.RedlockSemaphore = face.RedlockSemaphore
exports.RedlockMultiSemaphore = face.RedlockMultiSemaphore
exports.LostLockError = face.LostLockError
exports.TimeoutError = face.TimeoutError
