'use strict'

/**
 * The Redisson face (redislock-rs/redisson): what it exports. See
 * ../../redisson.js.
 */

const { Redisson } = require('./redisson')
const { TimeUnit } = require('./timeunit')
const { RedissonLockError } = require('../common/errors')

module.exports = { Redisson, TimeUnit, RedissonLockError }
