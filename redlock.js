'use strict'

/**
 * redislock-rs/redlock: a drop-in for redlock 4.2.0 (`module.exports =
 * Redlock`), on its scripts and keys, with the quorum, retries and waits
 * in Rust.
 */

module.exports = require('./lib/redlock')
