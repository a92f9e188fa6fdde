'use strict'

/**
 * The redis-semaphore face (redislock-rs/semaphore): redis-semaphore
 * 5.8's mutexes and semaphores, on one server or (the Redlock variants) a
 * quorum of independent servers, on its keys, values and
 * scripts (see lock.js and src/locks/semaphore.rs). What it exports; see
 * ../../semaphore.js.
 */

const { targetFor } = require('../common/targets')
const { serversFor } = require('../common/servers')
const { Lock, defaultTimeoutOptions, setTarget } = require('./lock')
const { LostLockError, TimeoutError } = require('./errors')

function targetOf (client, what) {
  if (!client) throw new Error('"client" is required')
  return targetFor(client, what)
}

function checkKey (key) {
  if (!key) throw new Error('"key" is required')
  if (typeof key !== 'string') throw new Error('"key" must be a string')
}

function checkCount (value, name) {
  if (!value) throw new Error(`"${name}" is required`)
  if (typeof value !== 'number') throw new Error(`"${name}" must be a number`)
  // Beyond theirs: a count that can never be granted is refused now.
  if (!Number.isSafeInteger(value) || value < 1 || value > 0xffffffff) {
    throw new Error(`"${name}" must be a positive integer; got ${value}`)
  }
}

/** One holder at a time: the string `mutex:<key>` holding the identifier. */
class RedisMutex extends Lock {
  constructor (client, key, options) {
    super(options)
    this._kind = 'mutex'
    const target = targetOf(client, 'new Mutex(client)')
    checkKey(key)
    this._client = client
    this._key = `mutex:${key}`
    setTarget(this, target)
  }
}

/** Up to `limit` holders: the sorted set `semaphore:<key>` of identifiers. */
class RedisSemaphore extends RedisMutex {
  constructor (client, key, limit, options) {
    super(client, key, options)
    this._kind = 'semaphore'
    checkCount(limit, 'limit')
    this._key = `semaphore:${key}`
    this._limit = limit
  }
}

/** `permits` of the `limit` places at once, as `<identifier>_<i>` members. */
class RedisMultiSemaphore extends RedisSemaphore {
  constructor (client, key, limit, permits, options) {
    super(client, key, limit, options)
    this._kind = 'multi-semaphore'
    checkCount(permits, 'permits')
    this._permits = permits
  }
}

function serversOf (clients, what) {
  if (!clients || !Array.isArray(clients)) throw new Error('"clients" array is required')
  // Beyond theirs: no servers could never grant a lock.
  if (clients.length === 0) throw new Error('"clients" array must hold at least one client')
  return serversFor(clients, what)
}

/** A mutex on a quorum of independent servers (`mutex:<key>` on each). */
class RedlockMutex extends Lock {
  constructor (clients, key, options = defaultTimeoutOptions) {
    super(options)
    this._kind = 'redlock-mutex'
    const servers = serversOf(clients, 'new RedlockMutex(clients)')
    checkKey(key)
    this._clients = clients
    this._key = `mutex:${key}`
    setTarget(this, servers)
  }
}

/** A semaphore on a quorum of independent servers (`semaphore:<key>` on each). */
class RedlockSemaphore extends RedlockMutex {
  constructor (clients, key, limit, options) {
    super(clients, key, options)
    this._kind = 'redlock-semaphore'
    checkCount(limit, 'limit')
    this._key = `semaphore:${key}`
    this._limit = limit
  }
}

/** A multi-semaphore on a quorum of independent servers. */
class RedlockMultiSemaphore extends RedlockSemaphore {
  constructor (clients, key, limit, permits, options) {
    super(clients, key, limit, options)
    this._kind = 'redlock-multi-semaphore'
    checkCount(permits, 'permits')
    this._permits = permits
  }
}

module.exports = {
  defaultTimeoutOptions,
  Mutex: RedisMutex,
  Semaphore: RedisSemaphore,
  MultiSemaphore: RedisMultiSemaphore,
  RedlockMutex,
  RedlockSemaphore,
  RedlockMultiSemaphore,
  LostLockError,
  TimeoutError
}
