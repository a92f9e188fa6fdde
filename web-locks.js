'use strict'

/**
 * redislock-rs/web-locks: the W3C Web Locks API's `LockManager` over
 * Redis, fleet-wide (lib/weblocks): `new LockManager(client, { prefix,
 * lease, clientId })`, `request()`, `query()`; and `Lock`.
 */

const { LockManager, Lock } = require('./lib/weblocks')

exports.LockManager = LockManager
exports.Lock = Lock
