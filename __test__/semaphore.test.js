'use strict'

/**
 * The redis-semaphore face (`redislock-rs/semaphore`) against the real
 * `redis-semaphore@5.8.0` as the oracle: each scenario runs through theirs
 * and ours on their own keys of one redis-server and must give the same
 * results, errors, messages and Redis state (keys, members, TTLs); theirs
 * and ours count against the same limit and exclude each other; and what
 * only ours does (refresh through a stalled event loop, `signal`, any
 * client kind) is checked against Redis.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const IORedis = require('ioredis')
const redis4 = require('redis4')
const theirs = require('redis-semaphore')
const ours = require('../semaphore')
const { useRedis } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')
const { rejection, caught } = require('./helpers/outcomes')

const redis = useRedis()
const clients = []
let seq = 0
const fresh = (what) => `sem:${what}:${process.pid}:${seq++}`

function client (options = {}) {
  const c = new IORedis({ port: redis.server.port, host: '127.0.0.1', maxRetriesPerRequest: 1, ...options })
  c.on('error', () => {})
  clients.push(c)
  return c
}

before(() => {})
after(() => {
  for (const c of clients) c.disconnect()
})

const IMPLS = [['theirs', theirs], ['ours', ours]]

/** Runs `scenario(lib, key)` through theirs and ours on keys of their own; the results must be equal. */
async function same (scenario) {
  const results = {}
  for (const [name, lib] of IMPLS) results[name] = await scenario(lib, fresh(name))
  assert.deepEqual(results.ours, results.theirs)
  return results.ours
}

/** What an error looks like, with `key` written as K. */
function shape (err, lib, key) {
  return {
    isError: err instanceof Error,
    isTimeout: err instanceof lib.TimeoutError,
    isLost: err instanceof lib.LostLockError,
    name: err.name,
    constructor: err.constructor.name,
    message: key === undefined ? err.message : err.message.split(key).join('K')
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('the exports and the defaults are theirs; the classes inherit as theirs', () => {
  assert.deepEqual(Object.keys(ours), Object.keys(theirs))
  assert.deepEqual(ours.defaultTimeoutOptions, theirs.defaultTimeoutOptions)
  const c = client()
  assert.ok(new ours.Semaphore(c, 'k', 2) instanceof ours.Mutex)
  assert.ok(new ours.MultiSemaphore(c, 'k', 2, 1) instanceof ours.Semaphore)
  for (const lib of [theirs, ours]) {
    const m = new lib.Mutex(c, 'k')
    assert.match(m.identifier, UUID)
    assert.equal(m.isAcquired, false)
    assert.equal(new lib.Mutex(c, 'k', { identifierSuffix: 'sfx' }).identifier.slice(36), '-sfx')
    assert.equal(new lib.Mutex(c, 'k', { identifier: 'me' }).identifier, 'me')
  }
})

test('bad arguments: their errors and messages, in their order', () => {
  const c = client()
  const cases = [
    (lib) => new lib.Mutex(),
    (lib) => new lib.Mutex(null, 'k'),
    (lib) => new lib.Mutex(c),
    (lib) => new lib.Mutex(c, 5),
    (lib) => new lib.Mutex(undefined, 'k', { identifier: '' }),
    (lib) => new lib.Mutex(c, 'k', { acquiredExternally: true }),
    (lib) => new lib.Mutex(c, 'k', { externallyAcquiredIdentifier: 'x', identifier: 'y' }),
    (lib) => new lib.Semaphore(c, 'k'),
    (lib) => new lib.Semaphore(c, 'k', '2'),
    (lib) => new lib.MultiSemaphore(c, 'k', 0, 0),
    (lib) => new lib.MultiSemaphore(c, 'k', 3),
    (lib) => new lib.MultiSemaphore(c, 'k', 3, '1')
  ]
  for (const make of cases) {
    const mine = caught(() => make(ours))
    const theirError = caught(() => make(theirs))
    assert.deepEqual(shape(mine, ours), shape(theirError, theirs), make.toString())
  }
  // Beyond theirs: what could never work is refused now, with an Error.
  for (const make of [
    () => new ours.Semaphore(c, 'k', 1.5),
    () => new ours.Semaphore(c, 'k', -1),
    () => new ours.Mutex(c, 'k', { lockTimeout: 0 }),
    () => new ours.Mutex(c, 'k', { retryInterval: -5 }),
    () => new ours.Mutex(c, 'k', { acquireAttemptsLimit: 1.5 }),
    () => new ours.Mutex(c, 'k', { onLockLost: 'loud' }),
    () => new ours.Mutex({ not: 'a client' }, 'k')
  ]) {
    const err = caught(make)
    assert.ok(err instanceof Error, make.toString())
  }
})

test('Mutex: the key, its value and TTL; a held mutex times out with their message; release removes it', async () => {
  const c = client()
  await same(async (lib, key) => {
    const m = new lib.Mutex(c, key, { lockTimeout: 5000, acquireTimeout: 60, retryInterval: 10 })
    await m.acquire()
    const value = await c.get(`mutex:${key}`)
    const ttl = await c.pttl(`mutex:${key}`)
    const other = new lib.Mutex(c, key, { acquireTimeout: 60, retryInterval: 10 })
    const tried = await other.tryAcquire()
    const err = await rejection(other.acquire())
    await m.release()
    await other.release() // not acquired: sends nothing
    return {
      held: value === m.identifier,
      ttlOk: ttl > 4000 && ttl <= 5000,
      isAcquired: m.isAcquired,
      tried,
      otherAcquired: other.isAcquired,
      err: shape(err, lib, key),
      after: await c.exists(`mutex:${key}`)
    }
  })
})

test('Semaphore: up to limit holders in the sorted set, scored by the acquire time; a release frees a place', async () => {
  const c = client()
  const got = await same(async (lib, key) => {
    const opts = { acquireTimeout: 60, retryInterval: 10, lockTimeout: 4000 }
    const sems = [0, 1, 2].map(() => new lib.Semaphore(c, key, 2, opts))
    const before = Date.now()
    const tried = []
    for (const s of sems) tried.push(await s.tryAcquire())
    const members = await c.zrange(`semaphore:${key}`, 0, -1, 'WITHSCORES')
    const ids = new Set(sems.filter((s) => s.isAcquired).map((s) => s.identifier))
    const scoresOk = members.filter((_, i) => i % 2 === 1).every((t) => Number(t) >= before - 5 && Number(t) <= Date.now())
    const ttl = await c.pttl(`semaphore:${key}`)
    const err = await rejection(sems[2].acquire())
    await sems[0].release()
    const third = await sems[2].tryAcquire()
    for (const s of sems) await s.release()
    return {
      tried,
      members: members.length / 2,
      theirIds: members.filter((_, i) => i % 2 === 0).every((m) => ids.has(m)),
      scoresOk,
      ttlOk: ttl > 3000 && ttl <= 4000,
      err: shape(err, lib, key),
      third,
      after: await c.exists(`semaphore:${key}`)
    }
  })
  assert.deepEqual(got.tried, [true, true, false])
})

test('MultiSemaphore: permits as <identifier>_<i> members; permits above what is free wait; release gives them all back', async () => {
  const c = client()
  await same(async (lib, key) => {
    const opts = { acquireTimeout: 60, retryInterval: 10 }
    const a = new lib.MultiSemaphore(c, key, 5, 3, opts)
    const b = new lib.MultiSemaphore(c, key, 5, 3, opts)
    const one = new lib.Semaphore(c, key, 5, opts)
    const got = [await a.tryAcquire(), await b.tryAcquire(), await one.tryAcquire()]
    const members = (await c.zrange(`semaphore:${key}`, 0, -1)).map((m) => m.replace(a.identifier, 'A').replace(one.identifier, 'ONE')).sort()
    const err = await rejection(b.acquire())
    await a.release()
    const later = await b.tryAcquire()
    for (const l of [a, b, one]) await l.release()
    return { got, members, err: shape(err, lib, key), later, after: await c.exists(`semaphore:${key}`) }
  })
})

test('theirs and ours count against the same limit and exclude each other, every class', async () => {
  const c = client()
  const opts = { acquireTimeout: 50, retryInterval: 10 }
  for (const [first, second] of [[theirs, ours], [ours, theirs]]) {
    const key = fresh('mix')
    const m1 = new first.Mutex(c, key, opts)
    await m1.acquire()
    assert.equal(await new second.Mutex(c, key, opts).tryAcquire(), false)
    await m1.release()
    const m2 = new second.Mutex(c, key, opts)
    assert.equal(await m2.tryAcquire(), true)
    await m2.release()

    const s1 = new first.Semaphore(c, key, 3, opts)
    const s2 = new second.Semaphore(c, key, 3, opts)
    const multi = new second.MultiSemaphore(c, key, 3, 2, opts)
    assert.equal(await s1.tryAcquire(), true)
    assert.equal(await multi.tryAcquire(), true, 'two of the three places')
    assert.equal(await s2.tryAcquire(), false, 'all three taken, by both libraries')
    assert.equal(await new first.MultiSemaphore(c, key, 3, 1, opts).tryAcquire(), false)
    await multi.release()
    assert.equal(await s2.tryAcquire(), true)
    await s1.release()
    await s2.release()
    assert.equal(await c.exists(`semaphore:${key}`), 0)
  }
})

test('acquiredExternally: the first acquire refreshes the lock another holder took, as theirs; a lock that is not there is not', async () => {
  const c = client()
  await same(async (lib, key) => {
    const owner = new lib.Mutex(c, key, { lockTimeout: 3000, refreshInterval: 0 })
    await owner.acquire()
    await c.pexpire(`mutex:${key}`, 1000)
    const handler = new lib.Mutex(c, key, { identifier: owner.identifier, acquiredExternally: true, lockTimeout: 8000, refreshInterval: 0 })
    const took = await handler.tryAcquire()
    const ttl = await c.pttl(`mutex:${key}`)
    await handler.release()
    const gone = await c.exists(`mutex:${key}`)
    const stranger = new lib.Semaphore(c, key, 2, { identifier: 'nobody', acquiredExternally: true, acquireTimeout: 50 })
    const err = await rejection(stranger.acquire())
    return { took, ttlOk: ttl > 7000, gone, err: shape(err, lib, key) }
  })
})

test('an AbortSignal: aborted before, it rejects with its reason and sends nothing; aborted while waiting, at once', async () => {
  const c = client()
  await same(async (lib, key) => {
    const holder = new lib.Mutex(c, key)
    await holder.acquire()
    const before = new AbortController()
    before.abort(new Error('before'))
    const waiter = new lib.Mutex(c, key, { acquireTimeout: 5000 })
    const first = await rejection(waiter.acquire(before.signal))
    const during = new AbortController()
    const t0 = Date.now()
    setTimeout(() => during.abort(new Error('during')), 50)
    const second = await rejection(waiter.acquire(during.signal))
    const quick = Date.now() - t0 < 2000
    await holder.release()
    return { first: first.message, second: second.message, quick, acquired: waiter.isAcquired }
  })
})

test('beyond redis-semaphore: the refresh runs off the event loop, so a lock outlives a blocked loop', async () => {
  const c = client()
  for (const make of [(k) => new ours.Mutex(c, k, { lockTimeout: 600 }), (k) => new ours.Semaphore(c, k, 2, { lockTimeout: 600 }), (k) => new ours.MultiSemaphore(c, k, 3, 2, { lockTimeout: 600 })]) {
    const key = fresh('stall')
    const lock = make(key)
    let lost = null
    lock._onLockLost = (err) => { lost = err }
    await lock.acquire()
    const until = Date.now() + 1500
    while (Date.now() < until) {} // eslint-disable-line no-empty
    await sleep(100)
    assert.equal(lost, null)
    assert.equal(lock.isAcquired, true)
    assert.equal(lock.signal.aborted, false)
    const redisKey = lock instanceof ours.Semaphore ? `semaphore:${key}` : `mutex:${key}`
    assert.equal(await c.exists(redisKey), 1, 'still held after 2.5 lock timeouts of blocked loop')
    await lock.release()
    assert.equal(await c.exists(redisKey), 0)
  }
})

test('a lost lock: onLockLost runs as a method with their LostLockError, the signal aborts with it, isAcquired is false', async () => {
  const c = client()
  let calls = []
  function onLockLost (err) { calls.push({ err, self: this }) }
  for (const [kind, make, redisKey] of [
    ['mutex', (k) => new ours.Mutex(c, k, { lockTimeout: 400, onLockLost }), (k) => `mutex:${k}`],
    ['semaphore', (k) => new ours.Semaphore(c, k, 2, { lockTimeout: 400, onLockLost }), (k) => `semaphore:${k}`],
    ['multi-semaphore', (k) => new ours.MultiSemaphore(c, k, 2, 2, { lockTimeout: 400, onLockLost }), (k) => `semaphore:${k}`]
  ]) {
    const key = fresh('lost')
    calls = []
    const lock = make(key)
    await lock.acquire()
    const signal = lock.signal
    await c.del(redisKey(key))
    for (let i = 0; i < 100 && calls.length === 0; i++) await sleep(20)
    assert.equal(calls.length, 1)
    assert.equal(calls[0].self, lock)
    assert.ok(calls[0].err instanceof ours.LostLockError)
    assert.equal(calls[0].err.message, `Lost ${kind} for key ${redisKey(key)}`)
    assert.equal(signal.aborted, true)
    assert.equal(signal.reason, calls[0].err)
    assert.equal(lock.isAcquired, false)
    // A clean release never aborts a signal.
    const again = make(key)
    await again.acquire()
    const s2 = again.signal
    await again.release()
    assert.equal(s2.aborted, false)
  }
})

test('the default onLockLost throws, as theirs: an unhandled rejection that ends a process that does not handle it', async () => {
  const r = await new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'semaphore-lost.js'), String(redis.server.port)])
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    const killer = setTimeout(() => child.kill('SIGKILL'), 20000)
    child.on('exit', (code, signal) => { clearTimeout(killer); resolve({ code, signal, out }) })
  })
  assert.equal(r.signal, null, r.out)
  assert.equal(r.code, 1, r.out)
  assert.match(r.out, /Lost mutex for key mutex:/)
})

test('stopRefresh: the lock is no longer refreshed and expires by its lockTimeout; release after it still deletes nothing it does not own', async () => {
  const c = client()
  const key = fresh('stop')
  let lost = null
  const m = new ours.Mutex(c, key, { lockTimeout: 300, onLockLost: (e) => { lost = e } })
  await m.acquire()
  m.stopRefresh()
  await sleep(700)
  assert.equal(await c.exists(`mutex:${key}`), 0)
  assert.equal(lost, null, 'not reported: nobody refreshes it')
  const other = new ours.Mutex(c, key)
  await other.acquire()
  await m.release()
  assert.equal(await c.get(`mutex:${key}`), other.identifier, 'the other holder keeps it')
  await other.release()
})

test('any client createLock takes: node-redis v4, a URL, an options object; ioredis keyPrefix is honoured', async () => {
  const r4 = redis4.createClient({ url: redis.server.url })
  await r4.connect()
  try {
    for (const c of [r4, redis.server.url, { host: '127.0.0.1', port: redis.server.port }]) {
      const key = fresh('client')
      const s = new ours.Semaphore(c, key, 1)
      await s.acquire()
      assert.deepEqual(await redis.check.zrange(`semaphore:${key}`, 0, -1), [s.identifier])
      await s.release()
    }
  } finally {
    await r4.quit()
  }
  const prefixed = client({ keyPrefix: 'app:' })
  await same(async (lib, key) => {
    const m = new lib.Mutex(prefixed, key)
    await m.acquire()
    const where = await redis.check.exists(`app:mutex:${key}`)
    await m.release()
    return where
  })
})

test('faults: a killed connection and a restarted server', async () => {
  const c = client()
  const key = fresh('fault')
  const m = new ours.Mutex(c, key, { lockTimeout: 5000 })
  await m.acquire()
  await redis.check.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
  await m.release()
  assert.equal(await redis.check.exists(`mutex:${key}`), 0)
  const s = new ours.Semaphore(c, key, 1, { lockTimeout: 800, onLockLost () {} })
  await s.acquire()
  const signal = s.signal
  await redis.server.restart()
  await redis.check.ping()
  for (let i = 0; i < 150 && !signal.aborted; i++) await sleep(20)
  assert.equal(signal.aborted, true, 'a restart emptied Redis: the lock is lost and says so')
  assert.ok(signal.reason instanceof ours.LostLockError)
  const next = new ours.Semaphore(c, key, 1, { acquireTimeout: 3000 })
  await next.acquire()
  await next.release()
})

test('wakeOnRelease, beyond redis-semaphore: a release wakes a waiter at once, not after its retryInterval, for every class', async () => {
  for (const [make, channelKey] of [
    [(c, k, o) => new ours.Mutex(c, k, o), (k) => `{mutex:${k}}:redislock-rs:released`],
    [(c, k, o) => new ours.Semaphore(c, k, 1, o), (k) => `{semaphore:${k}}:redislock-rs:released`],
    [(c, k, o) => new ours.MultiSemaphore(c, k, 2, 2, o), (k) => `{semaphore:${k}}:redislock-rs:released`]
  ]) {
    const key = fresh('wake')
    // The holder on another endpoint (another commandTimeout): the word comes through Redis.
    const holder = make({ host: '127.0.0.1', port: redis.server.port, commandTimeout: 1500 }, key, { wakeOnRelease: true })
    const waiter = make(client(), key, { wakeOnRelease: true, retryInterval: 10000, acquireTimeout: 30000 })
    await holder.acquire()
    const t0 = Date.now()
    const waiting = waiter.acquire()
    let subscribed = 0
    for (let i = 0; i < 100 && subscribed !== 1; i++) {
      await sleep(20)
      subscribed = (await redis.check.pubsub('NUMSUB', channelKey(key)))[1]
    }
    assert.equal(subscribed, 1, 'the waiter listens on the key\'s channel')
    await holder.release()
    await waiting
    const took = Date.now() - t0
    assert.ok(took < 5000, `woken by the release, not the 10 s retryInterval: ${took} ms`)
    assert.equal(waiter.isAcquired, true)
    await waiter.release()
  }
  assert.throws(() => new ours.Mutex(client(), 'k', { wakeOnRelease: 'yes' }), Error)
})

test('an abortSignal that is not one: a rejection, never a synchronous throw, as theirs', async () => {
  const c = client()
  for (const lib of [theirs, ours]) {
    const holder = new lib.Mutex(c, fresh('notsignal'))
    const p = holder.acquire({ aborted: false })
    assert.ok(p instanceof Promise)
    await p.then(() => holder.release(), (err) => assert.ok(err instanceof Error))
  }
})

test('a server that stops answering: acquire rejects with the face\'s TimeoutError at its acquireTimeout (the native error as cause), not at the command timeout', async () => {
  const { startProxy } = require('./helpers/proxy')
  const kinds = [
    (target, key) => new ours.Mutex(target, key, { acquireTimeout: 300 }),
    (target, key) => new ours.Semaphore(target, key, 2, { acquireTimeout: 300 })
  ]
  for (const make of kinds) {
    // A proxy of its own: what a black hole swallows is lost for good.
    const proxy = await startProxy(redis.server.port)
    try {
      // The command timeout is far beyond the acquireTimeout: the old code
      // rejected only when the command timed out, with a plain Error.
      const target = { host: '127.0.0.1', port: proxy.port, commandTimeout: 8000 }
      const key = fresh('blackhole')
      const warm = make(target, key + ':warm')
      await warm.acquire()
      await warm.release()
      proxy.blackhole()
      const lock = make(target, key)
      const started = Date.now()
      const err = await rejection(lock.acquire())
      const took = Date.now() - started
      assert.ok(err instanceof ours.TimeoutError, `${err && err.constructor.name}: ${err && err.message}`)
      assert.match(err.message, new RegExp(`^Acquire (mutex|semaphore) (mutex|semaphore):${key} timeout$`))
      assert.equal(err.cause && err.cause.code, 'ERR_REDIS_TIMEOUT')
      assert.ok(took < 6000, `rejected after ${took} ms: before the command timeout (8000 ms)`)
      assert.equal(lock.isAcquired, false)
    } finally {
      await proxy.close()
    }
  }
})
