'use strict'

/**
 * redislock-rs/redisson: a drop-in for node-redisson 1.0.4 (`Redisson`,
 * `TimeUnit`), on Redisson's lock format, with the wait loop, wake-ups and
 * the watchdog in Rust. Also exports `RedissonLockError`, which
 * node-redisson throws but does not export.
 */

module.exports = require('./lib/redisson')
