'use strict'

/**
 * Clients with no server we can reach: the native core decides every
 * command and sends it through the client's own methods
 * (lib/common/relay.js, src/transport/relay.rs). With ioredis-mock (no
 * server at all) every face locks, excludes, refreshes and releases, and
 * redis-semaphore 5.8.0 on the same mock excludes ours; a user's wrapper
 * marked with viaClient() carries every command to its real server; a
 * client that fails or never answers gives a clear error, not a hang.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const IORedisMock = require('ioredis-mock')
const IORedis = require('ioredis')
const theirs = require('redis-semaphore')
const R = require('..')
const S = require('../semaphore')
const Redlock = require('../redlock')
const { Redlock: Redlock5 } = require('../redlock-v5')
const { useRedis, serverKind } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')

const redis = useRedis()
let seq = 0
const fresh = (what) => `relay:${what}:${process.pid}:${seq++}`
// ioredis-mock instances share their data by host:port: one server each.
const mock = (n = 0) => new IORedisMock({ host: `mock-${process.pid}-${n}`, port: 4200 + n })

test('the redislock face on ioredis-mock: acquire, exclusion, extend, release, autoExtend', async () => {
  const c = mock(1)
  const key = fresh('redislock')
  const lock = R.createLock(c, { timeout: 3000, retries: 0 })
  await lock.acquire(key)
  assert.equal(await c.get(key), lock._id)
  const ttl = await c.pttl(key)
  assert.ok(ttl > 2000 && ttl <= 3000, `ttl ${ttl}`)
  await assert.rejects(R.createLock(c, { retries: 0 }).acquire(key), { name: 'LockAcquisitionError' })
  await lock.extend(8000)
  assert.ok(await c.pttl(key) > 7000)
  await lock.release()
  assert.equal(await c.exists(key), 0)
  const kept = R.createLock(c, { timeout: 500, autoExtend: true })
  await kept.acquire(key)
  await sleep(1200)
  assert.equal(await c.get(key), kept._id, 'renewed through the mock by the lease keeper')
  await kept.release()
  assert.equal(await c.exists(key), 0)
})

test('the redis-semaphore face on ioredis-mock, against redis-semaphore 5.8.0 on the same mock', async () => {
  const c = mock(2)
  const key = fresh('sem')
  const opts = { acquireTimeout: 60, retryInterval: 10 }
  const a = new theirs.Semaphore(c, key, 2, opts)
  const b = new S.Semaphore(c, key, 2, opts)
  const multi = new S.MultiSemaphore(c, key, 2, 1, opts)
  assert.equal(await a.tryAcquire(), true)
  assert.equal(await b.tryAcquire(), true)
  assert.equal(await multi.tryAcquire(), false, 'their holder and ours fill the limit')
  assert.equal(await c.zcard(`semaphore:${key}`), 2)
  await a.release()
  assert.equal(await multi.tryAcquire(), true)
  assert.ok(await c.zscore(`semaphore:${key}`, `${multi.identifier}_0`) > 0)
  await b.release()
  await multi.release()
  // (ioredis-mock keeps an emptied sorted set: its count tells.)
  assert.equal(await c.zcard(`semaphore:${key}`), 0)
  const m = new S.Mutex(c, key, opts)
  await m.acquire()
  assert.equal(await new theirs.Mutex(c, key, opts).tryAcquire(), false)
  await m.release()
  // The Redlock variants over three mocks (three "servers").
  const mocks = [mock(3), mock(4), mock(5)]
  const rl = new S.RedlockMutex(mocks, key, opts)
  await rl.acquire()
  assert.deepEqual(await Promise.all(mocks.map((x) => x.get(`mutex:${key}`))), Array(3).fill(rl.identifier))
  assert.equal(await new theirs.RedlockMutex(mocks, key, opts).tryAcquire(), false)
  await rl.release()
  assert.deepEqual(await Promise.all(mocks.map((x) => x.exists(`mutex:${key}`))), [0, 0, 0])
})

test('the node-redlock faces on ioredis-mock: several resources all or nothing, on one mock and on three', async () => {
  const c = mock(6)
  const [x, y] = [fresh('rl'), fresh('rl')]
  const v4 = new Redlock([c], { retryCount: 0 })
  const lock = await v4.lock([x, y], 2000)
  assert.deepEqual(await c.mget(x, y), [lock.value, lock.value])
  await assert.rejects(v4.lock(y, 1000), { name: 'LockError' })
  await lock.unlock()
  assert.equal(await c.exists(x, y), 0)
  const mocks = [mock(7), mock(8), mock(9)]
  const v5 = new Redlock5(mocks, { retryCount: 0 })
  const l5 = await v5.acquire([x, y], 2000)
  for (const m of mocks) assert.deepEqual(await m.mget(x, y), [l5.value, l5.value])
  await l5.release()
  for (const m of mocks) assert.equal(await m.exists(x, y), 0)
})

test('viaClient(): a wrapper carries every command to its own server; the lock is on that server', async () => {
  const real = new IORedis({ port: redis.server.port })
  const sent = []
  const wrapper = R.viaClient({
    call (name, ...args) {
      sent.push(name.toUpperCase())
      return real.call(name, ...args)
    },
    defineCommand () {}
  })
  try {
    const key = fresh('wrapped')
    const lock = R.createLock(wrapper, { timeout: 3000 })
    await lock.acquire(key)
    assert.equal(await redis.check.get(key), lock._id)
    await lock.release()
    assert.equal(await redis.check.exists(key), 0)
    assert.deepEqual(sent.filter((n) => n === 'SET').length, 1, `commands sent: ${sent.join(' ')}`)
    // Released by script, or on Valkey 9 by DELIFEQ, through the wrapper too.
    const released = serverKind() === 'valkey' ? ['DELIFEQ'] : ['EVALSHA', 'EVAL']
    assert.ok(sent.some((n) => released.includes(n)), `commands sent: ${sent.join(' ')}`)
    const m = new S.Mutex(wrapper, key)
    await m.acquire()
    assert.equal(await redis.check.get(`mutex:${key}`), m.identifier)
    await m.release()
  } finally {
    real.disconnect()
  }
  assert.throws(() => R.viaClient('redis://x'), TypeError)
})

test('a client that fails or never answers: a clear error, never a hang', async () => {
  const failing = R.viaClient({ call () { throw new Error('wrapper broke') }, defineCommand () {} })
  await assert.rejects(R.createLock(failing, { retries: 0 }).acquire(fresh('fail')), (err) => {
    assert.equal(err.name, 'LockAcquisitionError')
    assert.match(err.message, /wrapper broke/)
    return true
  })
  const silent = R.viaClient({ call () { return new Promise(() => {}) }, defineCommand () {} })
  const t0 = Date.now()
  await assert.rejects(R.createLock(silent, { retries: 0 }).acquire(fresh('silent')), (err) => {
    assert.match(err.message, /timed out|no reply/)
    return true
  })
  assert.ok(Date.now() - t0 < 10000, 'bounded by the command timeout')
})

test('a process that locks through ioredis-mock exits on its own', async () => {
  const r = await new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', `
      const Mock = require('ioredis-mock')
      const R = require(${JSON.stringify(path.join(__dirname, '..'))})
      const c = new Mock()
      const lock = R.createLock(c, { timeout: 2000, autoExtend: true })
      lock.acquire('exit:key').then(() => lock.release()).then(() => { c.disconnect(); process.stdout.write('released') })
    `], { cwd: path.join(__dirname, '..') })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    const killer = setTimeout(() => child.kill('SIGKILL'), 15000)
    child.on('exit', (code, signal) => { clearTimeout(killer); resolve({ code, signal, out }) })
  })
  assert.equal(r.signal, null, `had to be killed: ${r.out}`)
  assert.equal(r.code, 0, r.out)
  assert.equal(r.out, 'released')
})
