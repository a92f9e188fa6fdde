'use strict'

/**
 * The JavaScript-side contenders. Each one opens ONE Redis connection that
 * all of its workers share, and hands out workers whose `cycle()` does one
 * acquire + release (uncontended) or acquire-with-retries, a critical section
 * and a release (contended).
 *
 * open(port) resolves to { worker(key), contended(key, {delay, csMs}), close() }.
 */

const { randomUUID } = require('crypto')
const { setTimeout: sleep } = require('timers/promises')

const TTL = 10000
const DEL_IF_EQUAL = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nend\nreturn 0"

function ioredisClient (port) {
  const Redis = require('ioredis')
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 })
  return client.connect().then(() => client)
}

function closeIoredis (client) {
  return client.quit().catch(() => client.disconnect())
}

/** redislock 1.3.0 over a node_redis v3 client (what it was written for). */
const redislock = {
  id: 'redislock',
  label: 'redislock@1.3.0 (redis@3)',
  async open (port) {
    const redis3 = require('redis3')
    const client = redis3.createClient({ host: '127.0.0.1', port })
    await new Promise((resolve, reject) => { client.once('ready', resolve); client.once('error', reject) })
    const redislockLib = require('redislock')
    return {
      worker (key) {
        const lock = redislockLib.createLock(client, { timeout: TTL, retries: 0, delay: 50 })
        return { cycle: () => lock.acquire(key).then(() => lock.release()) }
      },
      contended (key, { delay, csMs }) {
        const lock = redislockLib.createLock(client, { timeout: TTL, retries: -1, delay })
        return {
          async cycle () {
            await lock.acquire(key)
            await sleep(csMs)
            await lock.release()
          }
        }
      },
      close: () => new Promise((resolve) => client.quit(() => resolve()))
    }
  }
}

/** redlock (latest), single instance, with ioredis. */
const redlock = {
  id: 'redlock',
  label: 'redlock@' + require('redlock/package.json').version + ' (ioredis, 1 instance)',
  async open (port) {
    const client = await ioredisClient(port)
    const Redlock = require('redlock')
    const plain = new Redlock([client], { retryCount: 10, retryDelay: 50, retryJitter: 0 })
    plain.on('clientError', () => {})
    const waiters = new Map()
    return {
      worker (key) {
        return { cycle: () => plain.lock(key, TTL).then((l) => l.unlock()) }
      },
      contended (key, { delay, csMs }) {
        let rl = waiters.get(delay)
        if (!rl) {
          rl = new Redlock([client], { retryCount: -1, retryDelay: delay, retryJitter: 0 })
          rl.on('clientError', () => {})
          waiters.set(delay, rl)
        }
        return {
          async cycle () {
            const l = await rl.lock(key, TTL)
            await sleep(csMs)
            await l.unlock()
          }
        }
      },
      close: () => closeIoredis(client)
    }
  }
}

/** redis-semaphore's Mutex with ioredis (auto-refresh off, like redislock). */
const semaphore = {
  id: 'redis-semaphore',
  label: 'redis-semaphore@' + require('redis-semaphore/package.json').version + ' Mutex (ioredis)',
  async open (port) {
    const client = await ioredisClient(port)
    const { Mutex } = require('redis-semaphore')
    return {
      worker (key) {
        const m = new Mutex(client, key, { lockTimeout: TTL, acquireAttemptsLimit: 1, refreshInterval: 0 })
        return { cycle: () => m.acquire().then(() => m.release()) }
      },
      contended (key, { delay, csMs }) {
        const m = new Mutex(client, key, { lockTimeout: TTL, acquireTimeout: 600000, retryInterval: delay, refreshInterval: 0 })
        return {
          async cycle () {
            await m.acquire()
            await sleep(csMs)
            await m.release()
          }
        }
      },
      close: () => closeIoredis(client)
    }
  }
}

/**
 * The JavaScript floor: what any Redis lock must do, written directly on
 * ioredis: SET key token PX ttl NX, then EVALSHA compare-and-delete.
 */
const floor = {
  id: 'js-floor',
  label: 'JS floor: raw ioredis SET NX + EVALSHA',
  async open (port) {
    const client = await ioredisClient(port)
    const sha = await client.script('LOAD', DEL_IF_EQUAL)
    return {
      worker (key) {
        const token = randomUUID()
        return {
          async cycle () {
            if (await client.set(key, token, 'PX', TTL, 'NX') !== 'OK') throw new Error('floor: lock held')
            await client.evalsha(sha, 1, key, token)
          }
        }
      },
      contended (key, { delay, csMs }) {
        const token = randomUUID()
        return {
          async cycle () {
            while (await client.set(key, token, 'PX', TTL, 'NX') !== 'OK') await sleep(delay)
            await sleep(csMs)
            await client.evalsha(sha, 1, key, token)
          }
        }
      },
      close: () => closeIoredis(client)
    }
  }
}

/** redislock-rs, this package (one shared native connection per endpoint). */
const rs = {
  id: 'redislock-rs',
  label: 'redislock-rs (this package)',
  async open (port) {
    const lib = require('..')
    const url = `redis://127.0.0.1:${port}`
    // Connect once outside the measurements.
    const probe = lib.createLock(url, { timeout: TTL })
    await probe.acquire('bench:rs:probe')
    await probe.release()
    return {
      worker (key) {
        const lock = lib.createLock(url, { timeout: TTL, retries: 0, delay: 50 })
        return { cycle: () => lock.acquire(key).then(() => lock.release()) }
      },
      contended (key, { delay, csMs }) {
        const lock = lib.createLock(url, { timeout: TTL, retries: -1, delay })
        return {
          async cycle () {
            await lock.acquire(key)
            await sleep(csMs)
            await lock.release()
          }
        }
      },
      close: async () => {}
    }
  }
}

const ALL = [redislock, redlock, semaphore, floor, rs]

module.exports = { ALL, byId: Object.fromEntries(ALL.map((c) => [c.id, c])), DEL_IF_EQUAL, TTL, ioredisClient, closeIoredis }
