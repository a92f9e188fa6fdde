'use strict'

/**
 * node-redisson 1.0.4's `Redisson` class: reads the config (the connection,
 * the watchdog timeout, the event adapter, replicas), hands out RLocks
 * (and, beyond node-redisson, Java Redisson's semaphores and count-down
 * latches) and stops this instance's renewals on `quit()`.
 */

const { randomUUID } = require('crypto')
const { targetFor } = require('../common/targets')
const { tokioEngineFor } = require('../native/bridge')
const { stopRedissonRenewals } = require('../native/loader')
const { RLock, Flavor, forgetInstance } = require('./rlock')
const { RReadWriteLock } = require('./read-write-lock')
const { RSemaphore } = require('./semaphore')
const { RPermitExpirableSemaphore } = require('./permit-semaphore')
const { RCountDownLatch } = require('./latch')

const DEFAULT_WATCHDOG_MS = 30000
// A fair lock waiter's timeout in the queue (ms): how long a waiter that
// died holds the queue up. Redisson's is 5 minutes; ours waiters renew
// theirs while they wait (src/locks/fair.rs), so it can be short.
const DEFAULT_FAIR_WAIT_MS = 5000

function watchdogMs (value) {
  if (value === undefined) return DEFAULT_WATCHDOG_MS
  if (typeof value !== 'bigint' && typeof value !== 'number') {
    throw new TypeError(`lockWatchdogTimeout must be a bigint or a number of milliseconds; got ${typeof value}`)
  }
  if (typeof value === 'number' && !Number.isInteger(value)) {
    throw new RangeError(`lockWatchdogTimeout must be an integer number of milliseconds; got ${value}`)
  }
  const ms = BigInt(value)
  if (ms < 3n) throw new RangeError(`lockWatchdogTimeout must be at least 3 ms (it is renewed every third of it); got ${value}`)
  if (ms > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`lockWatchdogTimeout is too large: ${value}`)
  return Number(ms)
}

function fairWaitMs (value) {
  if (value === undefined) return DEFAULT_FAIR_WAIT_MS
  if ((typeof value !== 'bigint' && typeof value !== 'number') || (typeof value === 'number' && !Number.isInteger(value))) {
    throw new TypeError(`new Redisson(config): fairLockWaitTimeout must be an integer number (or bigint) of milliseconds; got ${String(value)}`)
  }
  if (value < 3 || value > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(`new Redisson(config): fairLockWaitTimeout must be between 3 ms and Number.MAX_SAFE_INTEGER; got ${value}`)
  }
  return Number(value)
}

/** `replicas` / `replicaTimeout` of the config (beyond node-redisson): [count, ms] or null. */
function replicasOf (config) {
  const count = config.replicas
  if (count === undefined || count === null || count === 0) {
    if (config.replicaTimeout !== undefined && config.replicaTimeout !== null) {
      throw new TypeError('new Redisson(config): replicaTimeout is only read with replicas ≥ 1')
    }
    return null
  }
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0 || count > 0xffffffff) {
    throw new RangeError(`new Redisson(config): replicas must be a non-negative integer; got ${String(count)}`)
  }
  const ms = config.replicaTimeout === undefined || config.replicaTimeout === null ? 1000 : config.replicaTimeout
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 1) {
    throw new RangeError(`new Redisson(config): replicaTimeout must be a positive integer number of milliseconds; got ${String(ms)}`)
  }
  return [count, ms]
}

/** What to connect to: `{ client }` (anything createLock takes) or ioredis `{ options }`. */
function connectionOf (redis) {
  if (redis === null || typeof redis !== 'object') {
    throw new TypeError('new Redisson(config): config.redis must be { options } (ioredis options) or { client } (a Redis client, URL or options object)')
  }
  if (redis.clusters !== undefined) {
    // node-redisson: new Redis.Cluster(clusters, { redisOptions: options }).
    if (!Array.isArray(redis.clusters) || redis.clusters.length === 0) {
      throw new TypeError('new Redisson(config): config.redis.clusters must be a non-empty array of cluster nodes')
    }
    const options = redis.options === undefined || redis.options === null ? {} : redis.options
    const { host, port, path, db, ...shared } = options
    return { client: undefined, target: targetFor({ ...shared, cluster: redis.clusters }, 'new Redisson({ redis: { clusters } })') }
  }
  if (redis.client !== undefined) {
    return { client: redis.client, target: targetFor(redis.client, 'new Redisson({ redis: { client } })') }
  }
  const options = redis.options === undefined ? {} : redis.options
  if (options === null || typeof options !== 'object') {
    throw new TypeError('new Redisson(config): config.redis.options must be an ioredis options object')
  }
  // ioredis's defaults: 127.0.0.1:6379 unless a path is given.
  const withDefaults = options.path !== undefined
    ? options
    : { ...options, host: options.host ?? '127.0.0.1', port: options.port ?? 6379 }
  return { client: undefined, target: targetFor(withDefaults, 'new Redisson({ redis: { options } })') }
}

class Redisson {
  constructor (config) {
    if (config === null || typeof config !== 'object') {
      throw new TypeError('new Redisson(config): config must be an object { redis: { options } }')
    }
    const { eventAdapter = 'pubsub' } = config
    if (eventAdapter !== 'pubsub' && eventAdapter !== 'streams') {
      throw new TypeError(`new Redisson(config): eventAdapter must be 'pubsub' or 'streams'; got ${JSON.stringify(eventAdapter)}`)
    }
    const { client, target } = connectionOf(config.redis)
    this._id = randomUUID()
    this._watchdogMs = watchdogMs(config.lockWatchdogTimeout)
    this._fairWaitMs = fairWaitMs(config.fairLockWaitTimeout)
    if (eventAdapter === 'streams' && target.cluster) {
      // node-redisson's unlock script writes its event stream beside the
      // lock: two slots, which a cluster refuses (CROSSSLOT).
      throw new TypeError("new Redisson(config): eventAdapter 'streams' cannot work on Redis Cluster (its stream key is in another slot than the lock); use 'pubsub'")
    }
    this._adapter = eventAdapter
    // Beyond node-redisson: tryLock holds only once WAIT confirms this many
    // replicas have the write (Redisson's checkLockSyncedSlaves).
    this._replicas = replicasOf(config)
    this._client = client
    // Each acknowledged tryLock gets a connection of its own (WAIT blocks
    // the one it runs on): the tokio engine keeps those lanes.
    this._target = this._replicas === null ? target : { ...target, engine: tokioEngineFor() }
    this._closed = false
  }

  /**
   * node-redisson returns its own ioredis client here. redislock-rs talks
   * to Redis natively, so it has one only if you passed it.
   */
  get redis () {
    if (this._client === undefined) {
      throw new Error('redisson.redis: redislock-rs has no ioredis client of its own (it talks to Redis natively); ' +
        'pass your client as new Redisson({ redis: { client } }) to get it back here')
    }
    return this._client
  }

  getLock (name, clientId) {
    return new RLock(this, name, clientId)
  }

  /** Beyond node-redisson: Java Redisson's read-write lock. */
  getReadWriteLock (name, clientId) {
    return new RReadWriteLock(this, name, clientId)
  }

  /** Beyond node-redisson: Java Redisson's fair (first come, first served) lock. */
  getFairLock (name, clientId) {
    return new RLock(this, name, clientId, Flavor.FAIR)
  }

  /** Java Redisson's RSemaphore at `name` (beyond node-redisson). */
  getSemaphore (name) {
    return new RSemaphore(this, name)
  }

  /** Java Redisson's RPermitExpirableSemaphore at `name` (beyond node-redisson). */
  getPermitExpirableSemaphore (name) {
    return new RPermitExpirableSemaphore(this, name)
  }

  /** Java Redisson's RCountDownLatch at `name` (beyond node-redisson). */
  getCountDownLatch (name) {
    return new RCountDownLatch(this, name)
  }

  /** Stops this instance's watchdog renewals; later calls reject. */
  async quit () {
    if (this._closed) return
    this._closed = true
    stopRedissonRenewals(`${this._id}:`)
    forgetInstance(this._id)
  }
}

module.exports = { Redisson }
