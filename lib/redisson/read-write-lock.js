'use strict'

/**
 * Java Redisson's `RReadWriteLock` (`redisson.getReadWriteLock(name)`),
 * beyond node-redisson: a read lock many clients may hold at once and a
 * write lock one holds alone, both RLocks on one hash (Java Redisson's
 * layout: docs/redisson-layout.md). The pair shares a clientId, so a
 * writer may also take the read lock (and keep it after its write unlock),
 * as a Java thread may.
 */

const { randomUUID } = require('crypto')
const { RLock, Flavor } = require('./rlock')

const kRead = Symbol('redislock-rs.readLock')
const kWrite = Symbol('redislock-rs.writeLock')

class RReadWriteLock {
  constructor (redisson, name, clientId) {
    const id = clientId ?? randomUUID()
    // RLock checks the name and the clientId.
    this[kRead] = new RLock(redisson, name, id, Flavor.READ)
    this[kWrite] = new RLock(redisson, name, id, Flavor.WRITE)
  }

  get name () {
    return this[kRead].name
  }

  /** The read lock: shared with other readers, never with a writer but its own. */
  readLock () {
    return this[kRead]
  }

  /** The write lock: held by one client, while no other reads. */
  writeLock () {
    return this[kWrite]
  }
}

module.exports = { RReadWriteLock }
