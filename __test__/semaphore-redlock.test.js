'use strict'

/**
 * The redis-semaphore face's Redlock variants (RedlockMutex,
 * RedlockSemaphore, RedlockMultiSemaphore) over three redis-servers,
 * against the real `redis-semaphore@5.8.0`: the same state on every
 * server, the same errors; theirs and ours share a limit; a quorum grants,
 * a server down does not stop it and two do; the refresh restores the lock
 * where a server lost it, and a lock lost on a majority says so.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const IORedis = require('ioredis')
const theirs = require('redis-semaphore')
const ours = require('../semaphore')
const { startRedis, admin } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')
const { rejection } = require('./helpers/outcomes')

const servers = []
const clients = []
const checks = []
let seq = 0
const fresh = (what) => `semrl:${what}:${process.pid}:${seq++}`

function client (port) {
  const c = new IORedis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 50 })
  c.on('error', () => {})
  clients.push(c)
  return c
}

before(async () => {
  for (let i = 0; i < 3; i++) servers.push(await startRedis())
  for (const s of servers) checks.push(admin(s.port))
})

after(async () => {
  for (const c of clients) c.disconnect()
  for (const c of checks) await c.quit()
  for (const s of servers) await s.stop()
})

const all = () => servers.map((s) => client(s.port))
const onEvery = (fn) => Promise.all(checks.map(fn))

test('Redlock variants: the same keys and members on every server, the same TimeoutError, the same release', async () => {
  const results = {}
  for (const [name, lib] of [['theirs', theirs], ['ours', ours]]) {
    const key = fresh(name)
    const opts = { acquireTimeout: 80, retryInterval: 10 }
    const cs = all()
    const mutex = new lib.RedlockMutex(cs, key, opts)
    await mutex.acquire()
    const mutexValues = await onEvery((c) => c.get(`mutex:${key}`))
    const mutexErr = await rejection(new lib.RedlockMutex(cs, key, opts).acquire())
    await mutex.release()
    const sem = [0, 1].map(() => new lib.RedlockSemaphore(cs, key, 2, opts))
    for (const s of sem) await s.acquire()
    const semMembers = await onEvery((c) => c.zcard(`semaphore:${key}`))
    const semErr = await rejection(new lib.RedlockSemaphore(cs, key, 2, opts).acquire())
    for (const s of sem) await s.release()
    const multi = new lib.RedlockMultiSemaphore(cs, key, 3, 2, opts)
    await multi.acquire()
    const multiMembers = await onEvery((c) => c.zrange(`semaphore:${key}`, 0, -1))
    await multi.release()
    results[name] = {
      mutexValues: mutexValues.map((v) => v === mutex.identifier),
      mutexErr: [mutexErr.constructor.name, mutexErr.message.split(key).join('K')],
      semMembers,
      semErr: [semErr.constructor.name, semErr.message.split(key).join('K')],
      multiMembers: multiMembers.map((m) => m.map((x) => x.replace(multi.identifier, 'ID')).sort()),
      after: await onEvery((c) => c.exists(`mutex:${key}`, `semaphore:${key}`))
    }
  }
  assert.deepEqual(results.ours, results.theirs)
  assert.deepEqual(results.ours.multiMembers, Array(3).fill(['ID_0', 'ID_1']))
  assert.throws(() => new ours.RedlockMutex(client(servers[0].port), 'k'), { message: '"clients" array is required' })
  assert.throws(() => new ours.RedlockMutex([], 'k'), Error)
})

test('theirs and ours share a RedlockSemaphore\'s limit over three servers', async () => {
  const key = fresh('mix')
  const opts = { acquireTimeout: 60, retryInterval: 10 }
  const a = new theirs.RedlockSemaphore(all(), key, 2, opts)
  const b = new ours.RedlockSemaphore(all(), key, 2, opts)
  const c = new ours.RedlockMultiSemaphore(all(), key, 2, 1, opts)
  const d = new theirs.RedlockMutex(all(), key, opts)
  assert.equal(await a.tryAcquire(), true)
  assert.equal(await b.tryAcquire(), true)
  assert.equal(await c.tryAcquire(), false, 'both places taken, one by each library')
  await a.release()
  assert.equal(await c.tryAcquire(), true)
  const m = new ours.RedlockMutex(all(), key, opts)
  assert.equal(await d.tryAcquire(), true)
  assert.equal(await m.tryAcquire(), false)
  for (const l of [b, c, d]) await l.release()
  assert.deepEqual(await onEvery((x) => x.exists(`semaphore:${key}`, `mutex:${key}`)), [0, 0, 0])
})


test('a RedlockMultiSemaphore attempt short of a quorum gives back every permit it took; redis-semaphore 5.8.0 leaves them behind', async () => {
  // Two servers full (a foreign holder's two permits of three), one empty:
  // an attempt takes its two permits on the empty one only, short of a
  // quorum. Theirs then sends `ZREM key <identifier>`, which names none of
  // its members (`<identifier>_0`, `_1`): its permits stay until they
  // expire, and a fleet retrying against them can starve itself (issue 34's
  // fleet-test stall). Ours gives back the members it added.
  const left = {}
  for (const [name, lib] of [['theirs', theirs], ['ours', ours]]) {
    const key = fresh(`multi-leak-${name}`)
    const now = Date.now()
    for (const c of checks.slice(1)) await c.zadd(`semaphore:${key}`, now, 'other_0', now, 'other_1')
    const multi = new lib.RedlockMultiSemaphore(all(), key, 3, 2, { acquireAttemptsLimit: 1 })
    assert.equal(await multi.tryAcquire(), false)
    left[name] = (await checks[0].zrange(`semaphore:${key}`, 0, -1)).map((m) => m.replace(multi.identifier, 'ID'))
    await onEvery((c) => c.del(`semaphore:${key}`))
  }
  assert.deepEqual(left, { theirs: ['ID_0', 'ID_1'], ours: [] })
})
test('a quorum grants: one server down does not stop a lock, two do; a release never fails', async () => {
  const key = fresh('down')
  const cs = all()
  await servers[2].stop()
  try {
    const m = new ours.RedlockSemaphore(cs, key, 1, { acquireTimeout: 500, lockTimeout: 3000 })
    const t0 = Date.now()
    await m.acquire()
    assert.ok(Date.now() - t0 < 2000, 'a server down costs at most its server timeout')
    assert.deepEqual(await Promise.all(checks.slice(0, 2).map((c) => c.zcard(`semaphore:${key}`))), [1, 1])
    await m.release()
    await servers[1].stop()
    const err = await rejection(new ours.RedlockMutex(cs, key, { acquireTimeout: 200 }).acquire())
    assert.ok(err instanceof ours.TimeoutError)
    assert.equal(err.message, `Acquire redlock-mutex mutex:${key} timeout`)
    assert.equal(await checks[0].exists(`mutex:${key}`), 0, 'what one server granted is given back')
  } finally {
    await servers[1].start()
    await servers[2].start()
  }
  // All three down: release still resolves.
  const m = new ours.RedlockMutex(all(), key, { lockTimeout: 2000 })
  await m.acquire()
  for (const s of servers) await s.stop()
  try {
    await m.release()
    assert.equal(m.isAcquired, false)
  } finally {
    for (const s of servers) await s.start()
    await sleep(100)
  }
})

test('the refresh restores the lock on a server that lost it; a lock lost on a majority is lost, its signal says so', async () => {
  const key = fresh('refresh')
  let lost = null
  const m = new ours.RedlockMultiSemaphore(all(), key, 4, 2, { lockTimeout: 600, onLockLost: (e) => { lost = e } })
  await m.acquire()
  await checks[1].del(`semaphore:${key}`)
  let back = 0
  for (let i = 0; i < 100 && back !== 2; i++) {
    await sleep(20)
    back = await checks[1].zcard(`semaphore:${key}`)
  }
  assert.equal(back, 2, 'both permits back on the server that lost them')
  assert.equal(lost, null)
  const signal = m.signal
  await checks[0].del(`semaphore:${key}`)
  await checks[1].del(`semaphore:${key}`)
  for (let i = 0; i < 100 && lost === null; i++) await sleep(20)
  assert.ok(lost instanceof ours.LostLockError)
  assert.equal(lost.message, `Lost redlock-multi-semaphore for key semaphore:${key}`)
  assert.equal(signal.reason, lost)
  assert.equal(m.isAcquired, false)
  assert.deepEqual(await onEvery((c) => c.exists(`semaphore:${key}`)), [0, 0, 0], 'given back everywhere once lost')
})

test('wakeOnRelease on a Redlock variant: the waiter listens on every server and a release wakes it at once', async () => {
  const key = fresh('wake')
  const channel = `{semaphore:${key}}:redislock-rs:released`
  const holder = new ours.RedlockSemaphore(servers.map((s) => ({ host: '127.0.0.1', port: s.port, commandTimeout: 1500 })), key, 1, { wakeOnRelease: true })
  const waiter = new ours.RedlockSemaphore(all(), key, 1, { wakeOnRelease: true, retryInterval: 10000, acquireTimeout: 30000 })
  await holder.acquire()
  const t0 = Date.now()
  const waiting = waiter.acquire()
  let subscribed = []
  for (let i = 0; i < 100; i++) {
    await sleep(20)
    subscribed = await onEvery(async (c) => (await c.pubsub('NUMSUB', channel))[1])
    if (subscribed.every((n) => n === 1)) break
  }
  assert.deepEqual(subscribed, [1, 1, 1])
  await holder.release()
  await waiting
  assert.ok(Date.now() - t0 < 5000, `woken by the release: ${Date.now() - t0} ms`)
  await waiter.release()
  assert.deepEqual(await onEvery((c) => c.zcard(`semaphore:${key}`)), [0, 0, 0])
})

test('a refresh round that two slow servers do not answer in time does not lose a RedlockSemaphore with most of its lease left, as theirs keeps its own', async () => {
  const { startProxy } = require('./helpers/proxy')
  const proxies = [await startProxy(servers[1].port), await startProxy(servers[2].port)]
  try {
    const cs = [client(servers[0].port), client(proxies[0].port), client(proxies[1].port)]
    const lost = []
    const key = fresh('slow-round')
    const held = [
      ['ours', new ours.RedlockSemaphore(cs, key + ':ours', 2, { lockTimeout: 3000, onLockLost: () => lost.push('ours') })],
      ['theirs', new theirs.RedlockSemaphore(cs, key + ':theirs', 2, { lockTimeout: 3000, refreshInterval: 1000, onLockLost: () => lost.push('theirs') })]
    ]
    for (const [, s] of held) await s.acquire()
    // Replies 70 ms late (more than a 3 s lease's 50 ms per-server bound)
    // for over one of our refresh rounds, well within the lease.
    for (const p of proxies) p.delayReplies(70)
    await sleep(1200)
    for (const p of proxies) p.delayReplies(0)
    await sleep(3500)
    assert.deepEqual(lost, [], 'nobody lost')
    for (const [name, s] of held) {
      assert.equal(s.isAcquired, true, name)
      const members = await onEvery((c) => c.zrange(`semaphore:${key}:${name}`, 0, -1))
      assert.deepEqual(members, [[s.identifier], [s.identifier], [s.identifier]], `${name}: on every server`)
    }
    for (const [, s] of held) await s.release()
  } finally {
    for (const p of proxies) await p.close()
  }
})
