'use strict'

/**
 * redislock-rs/redlock/v5: a drop-in for node-redlock 5 (`redlock@next`)
 * and @sesamecare-oss/redlock 1.4.0: `Redlock` (also the default export),
 * `Lock`, `ExecutionError`, `ResourceLockedError`.
 */

const v5 = require('./lib/redlock/v5')

Object.defineProperty(exports, '__esModule', { value: true })
exports.default = v5.Redlock
exports.Redlock = v5.Redlock
exports.Lock = v5.Lock
exports.ExecutionError = v5.ExecutionError
exports.ResourceLockedError = v5.ResourceLockedError
