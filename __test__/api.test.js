'use strict'

/**
 * redislock-rs on its own: the module surface, bad input (a clear error of
 * the right class through the same promise/callback channel), an
 * unreachable Redis, and the ESM entry point.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { useRedis, freePort } = require('./helpers/redis')
const redislock = require('..')
const { sleep } = require('./helpers/wait')

const { createLock, setDefaults, LockAcquisitionError, LockReleaseError, LockExtendError } = redislock

const redis = useRedis()


test('exports redislock\'s surface, and beyond it exactly using, inspect, viaClient and LockLostError', () => {
  const ours = Object.keys(redislock)
  const theirs = Object.keys(require('redislock'))
  for (const name of theirs) assert.ok(ours.includes(name), name)
  assert.deepEqual(ours.filter((n) => !theirs.includes(n)).sort(), ['LockLostError', 'inspect', 'using', 'viaClient'])
})

test('ESM import gives the same functions', async () => {
  const esm = await import('redislock-rs')
  assert.equal(esm.createLock, createLock)
  assert.equal(esm.LockExtendError, LockExtendError)
  assert.equal(esm.default, redislock)
})

test('createLock rejects unusable clients with a TypeError that says what a client may be', () => {
  for (const bad of [undefined, null, 42, true, 'localhost:6379', 'http://127.0.0.1:6379', [], { foo: 'bar' },
    () => {}, { port: 'abc' }, { port: 70000 }, { url: 'mysql://x' }]) {
    assert.throws(() => createLock(bad), (err) => {
      assert.ok(err instanceof TypeError, `${String(bad)}: ${err}`)
      assert.match(err.message, /node_redis .*ioredis .*redis:\/\/.*unix:\/\/ URL, or an options object/)
      return true
    }, `client ${JSON.stringify(bad)}`)
  }
})

test('createLock rejects options that are not an object', () => {
  assert.throws(() => createLock(redis.server.url, 'fast'), TypeError)
})

test('keys that are not non-empty strings are rejected, naming the key', async () => {
  const lock = createLock(redis.server.url)
  for (const key of [undefined, null, '', 42, {}, ['a'], Symbol('s')]) {
    await assert.rejects(lock.acquire(key), (err) => {
      assert.ok(err instanceof LockAcquisitionError)
      assert.match(err.message, /^Invalid lock key .+: the key must be a non-empty string$/)
      return true
    })
  }
  assert.match(await lock.acquire(42).catch((e) => e.message), /key 42/)
  assert.equal(lock._locked, false)
})

test('a timeout of zero or less is rejected at acquire with a message that says so', async () => {
  for (const timeout of [0, -5, '0', 'abc']) {
    const lock = createLock(redis.server.url, { timeout })
    await assert.rejects(lock.acquire('api:t'), (err) => {
      assert.ok(err instanceof LockAcquisitionError)
      assert.match(err.message, /^Invalid timeout -?\d+: the lock timeout must be a positive integer/)
      return true
    })
    assert.equal(lock._locked, false)
  }
  setDefaults({ timeout: 'abc' })
  try {
    await assert.rejects(createLock(redis.server.url).acquire('api:t'), /Invalid timeout NaN/)
  } finally {
    setDefaults({ timeout: 10000 })
  }
})

test('a negative delay is rejected at acquire', async () => {
  const lock = createLock(redis.server.url, { delay: -5, retries: 1 })
  await assert.rejects(lock.acquire('api:d'), (err) => err instanceof LockAcquisitionError && /Invalid delay -5/.test(err.message))
})

test('bad extend times are rejected with LockExtendError, the lock stays held', async () => {
  const lock = createLock(redis.server.url)
  await lock.acquire('api:x')
  for (const t of [0, -5, 1.5, '100', NaN, Infinity, 2 ** 60]) {
    await assert.rejects(lock.extend(t), (err) => {
      assert.ok(err instanceof LockExtendError, String(t))
      assert.match(err.message, /^Int time is required to extend lock/)
      return true
    })
  }
  assert.equal(lock._locked, true)
  await lock.release()
})

test('argument errors reach a callback too, exactly once', async () => {
  const lock = createLock(redis.server.url)
  const seen = []
  await new Promise((resolve) => lock.acquire('', (err, ...rest) => { seen.push([err, rest.length]); resolve() }))
  await new Promise((resolve) => lock.extend(-1, (err) => { seen.push([err]); resolve() }))
  await new Promise((resolve) => lock.release((err) => { seen.push([err]); resolve() }))
  await sleep(20)
  assert.equal(seen.length, 3)
  assert.ok(seen[0][0] instanceof LockAcquisitionError)
  assert.ok(seen[1][0] instanceof LockExtendError)
  assert.ok(seen[2][0] instanceof LockReleaseError)
})

test('an unreachable Redis gives LockAcquisitionError within a few seconds, with the cause', async () => {
  const port = await freePort()
  const lock = createLock({ host: '127.0.0.1', port, password: 'hunter2' })
  const started = Date.now()
  const err = await lock.acquire('api:u').catch((e) => e)
  const took = Date.now() - started
  assert.ok(err instanceof LockAcquisitionError, String(err))
  assert.ok(took < 3000, `took ${took} ms`)
  assert.ok(err.cause instanceof Error)
  assert.equal(err.cause.code, 'ERR_REDIS_CONNECTION')
  assert.doesNotMatch(err.message + err.cause.message + err.stack, /hunter2/)
  assert.equal(lock._locked, false)
})

test('one acquire per lock at a time: a second concurrent acquire is refused', async () => {
  const lock = createLock(redis.server.url)
  const first = lock.acquire('api:c1')
  await assert.rejects(lock.acquire('api:c2'), /Lock already held/)
  await first
  assert.equal(lock._key, 'api:c1')
  await lock.release()
})

test('a lock\'s own fields are redislock\'s, in its order; its other state is Symbol-keyed (lib/common/lock-base.js)', () => {
  const fields = ['_id', '_locked', '_key', '_client', 'timeout', 'retries', 'delay']
  for (const options of [undefined, { autoExtend: true, fencing: true, wakeOnRelease: true }]) {
    const lock = createLock(redis.server.url, options)
    assert.deepEqual(Object.keys(lock), fields)
    assert.deepEqual(Object.getOwnPropertyNames(lock), fields)
    assert.deepEqual(Object.keys(JSON.parse(JSON.stringify({ ...lock, _client: null }))), fields)
  }
  const servers = [redis.server.url, 'redis://127.0.0.1:1', 'redis://127.0.0.1:2']
  for (const options of [undefined, { autoExtend: true, wakeOnRelease: true }]) {
    const quorum = createLock(servers, options)
    assert.deepEqual(Object.keys(quorum), [...fields, 'serverTimeout', 'retryJitter'])
    assert.deepEqual(Object.getOwnPropertyNames(quorum), [...fields, 'serverTimeout', 'retryJitter'])
  }
})

test('tokens are random UUID v4', () => {
  const ids = new Set()
  for (let i = 0; i < 100; i++) {
    const id = createLock(redis.server.url)._id
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    ids.add(id)
  }
  assert.equal(ids.size, 100)
})

test('every face\'s lock takes `signal` from the one lock base, and none gains an own property for it', async () => {
  const IORedis = require('ioredis')
  const client = new IORedis({ port: redis.server.port })
  const { Redisson } = require('../redisson')
  const Redlock4 = require('../redlock')
  const { default: Redlock5 } = require('../redlock-v5')
  const { Mutex, RedlockSemaphore } = require('../semaphore')
  const redisson = new Redisson({ redis: { options: { host: '127.0.0.1', port: redis.server.port } } })
  const getter = (obj) => {
    for (let p = obj; p !== null; p = Object.getPrototypeOf(p)) {
      const d = Object.getOwnPropertyDescriptor(p, 'signal')
      if (d !== undefined) return d.get
    }
    return undefined
  }
  const enumerable = (obj) => Reflect.ownKeys(obj).filter((k) => Object.getOwnPropertyDescriptor(obj, k).enumerable)
  try {
    const fresh = (face) => `api:base:${face}:${process.pid}`
    const r4 = await new Redlock4([client]).lock(fresh('redlock4'), 2000)
    const r5 = await new Redlock5([client]).acquire([fresh('redlock5')], 2000)
    const locks = {
      redislock: createLock(client),
      quorum: createLock([{ port: redis.server.port }]),
      redisson: redisson.getLock(fresh('redisson')),
      redlock4: r4,
      redlock5: r5,
      mutex: new Mutex(client, fresh('mutex')),
      redlockSemaphore: new RedlockSemaphore([client], fresh('sem'), 2)
    }
    const base = getter(locks.redislock)
    assert.equal(typeof base, 'function')
    for (const [face, lock] of Object.entries(locks)) {
      assert.equal(getter(lock), base, `${face}: signal from the one base`)
      const before = enumerable(lock)
      const signal = lock.signal
      // redislock and Redisson answer null before the first hold; redlock
      // and redis-semaphore a signal for the hold they have or will have.
      const nullBefore = face === 'redislock' || face === 'quorum' || face === 'redisson'
      assert.equal(signal === null, nullBefore, `${face}: signal ${signal}`)
      if (signal !== null) assert.equal(signal.aborted, false, face)
      assert.deepEqual(enumerable(lock), before, `${face}: asking for the signal added no enumerable property`)
    }
    // The peer-shaped locks keep exactly the peer's own string keys.
    assert.deepEqual(Object.keys(r4), ['redlock', 'resource', 'value', 'expiration', 'attempts', 'attemptsRemaining'])
    assert.deepEqual(Object.keys(r5), ['redlock', 'resources', 'value', 'attempts', 'expiration', 'settings'])
    await r4.unlock()
    await r5.release()
  } finally {
    await redisson.quit()
    await client.quit()
  }
})
