'use strict'

/**
 * The node-redlock face for redlock 4.2.0 users: `module.exports = Redlock`
 * with `Redlock.Lock` and `Redlock.LockError`, as redlock exports them.
 */

module.exports = require('./redlock')
