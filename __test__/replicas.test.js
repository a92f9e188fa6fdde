'use strict'

/**
 * Replica-acknowledged locks (`replicas: N, replicaTimeout`) on a primary
 * with two replicas started here: a grant counts only once WAIT confirms N
 * replicas have it; a paused replica makes the acquire fail within about
 * replicaTimeout, leaving no key; asking for more replicas than exist is
 * refused before anything is written.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('fs')
const os = require('os')
const path = require('path')
const IORedis = require('ioredis')
const R = require('..')
const { startRedis, command } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')

let primary
let dir
const replicas = []
let check

before(async () => {
  // A replica stores the dataset it syncs as dump.rdb in its --dir: keep
  // that out of the working tree.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-replicas-'))
  primary = await startRedis({ args: ['--dir', dir] })
  for (let i = 0; i < 2; i++) {
    const own = fs.mkdtempSync(path.join(dir, `replica-${i}-`))
    replicas.push(await startRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port), '--dir', own] }))
  }
  check = new IORedis({ port: primary.port })
  // Wait until both replicas are in sync.
  for (let i = 0; i < 200; i++) {
    const info = await check.info('replication')
    if ((info.match(/state=online/g) || []).length === 2) return
    await sleep(50)
  }
  throw new Error('the replicas did not come online')
})

after(async () => {
  for (const r of replicas) process.kill(r.pid, 'SIGCONT')
  if (check) await check.quit()
  for (const r of replicas) await r.stop()
  if (primary) await primary.stop()
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

test('replicas: 2 succeeds once both replicas acknowledged, and extend waits too', async () => {
  const lock = R.createLock(primary.url, { timeout: 5000, replicas: 2, replicaTimeout: 1000 })
  await lock.acquire('repl:ok')
  assert.equal(await check.get('repl:ok'), lock._id)
  assert.equal(await command(replicas[0].port, 'GET', 'repl:ok'), lock._id, 'the replica has it when acquire resolves')
  await lock.extend(8000)
  assert.ok(await check.pttl('repl:ok') > 7000)
  await lock.release()
})

test('with one replica paused, replicas: 2 fails within about replicaTimeout and leaves no key', async () => {
  process.kill(replicas[1].pid, 'SIGSTOP')
  try {
    const lock = R.createLock(primary.url, { timeout: 5000, replicas: 2, replicaTimeout: 300 })
    const t0 = Date.now()
    const err = await lock.acquire('repl:paused').catch((e) => e)
    const took = Date.now() - t0
    assert.ok(err instanceof R.LockAcquisitionError, String(err))
    assert.match(err.message, /replicated to 1 of 2 replicas within 300 ms/)
    assert.equal(err.cause && err.cause.code, 'ERR_NOT_REPLICATED')
    assert.ok(took >= 290 && took < 1500, `failed after ${took} ms`)
    assert.equal(lock._locked, false)
    assert.equal(await check.exists('repl:paused'), 0, 'the grant was released')
    // One replica is enough for replicas: 1.
    const one = R.createLock(primary.url, { timeout: 5000, replicas: 1, replicaTimeout: 300 })
    await one.acquire('repl:paused')
    // An extend that the paused replica cannot acknowledge under replicas: 2.
    const two = R.createLock(primary.url, { timeout: 5000, replicas: 2, replicaTimeout: 200 })
    await one.release()
    process.kill(replicas[1].pid, 'SIGCONT')
    await sleep(300)
    await two.acquire('repl:ext')
    process.kill(replicas[1].pid, 'SIGSTOP')
    const ext = await two.extend(5000).catch((e) => e)
    assert.ok(ext instanceof R.LockExtendError, String(ext))
    assert.match(ext.message, /replicated to 1 of 2 replicas/)
    assert.equal(two._locked, false, 'not vouched for: released')
    assert.equal(two.signal.aborted, true)
    assert.equal(await check.exists('repl:ext'), 0)
  } finally {
    process.kill(replicas[1].pid, 'SIGCONT')
  }
})

test('acknowledged operations each wait on a connection of their own: concurrent waits do not queue, plain locks are not held up', async () => {
  process.kill(replicas[1].pid, 'SIGSTOP')
  try {
    const plain = R.createLock(primary.url, { timeout: 5000 })
    const t0 = Date.now()
    const waits = [0, 1, 2, 3].map(async (i) => {
      const lock = R.createLock(primary.url, { timeout: 5000, replicas: 2, replicaTimeout: 400 })
      const err = await lock.acquire(`repl:lane:${i}`).catch((e) => e)
      return { err, took: Date.now() - t0 }
    })
    await sleep(50)
    // While four WAITs are pending: a plain lock on the same server.
    const p0 = Date.now()
    await plain.acquire('repl:lane:plain')
    await plain.release()
    const plainTook = Date.now() - p0
    const done = await Promise.all(waits)
    for (const { err, took } of done) {
      assert.match(String(err && err.message), /replicated to 1 of 2 replicas within 400 ms/)
      // Side by side, not one after another (that would be 4 × 400 ms).
      assert.ok(took < 1200, `an acknowledged acquire failed after ${took} ms`)
    }
    assert.ok(plainTook < 300, `the plain lock took ${plainTook} ms behind the WAITs`)
    for (let i = 0; i < 4; i++) assert.equal(await check.exists(`repl:lane:${i}`), 0)
  } finally {
    process.kill(replicas[1].pid, 'SIGCONT')
  }
  await sleep(300)
})

test('more replicas than the primary has, or a replica as the server: refused before any write', async () => {
  const lock = R.createLock(primary.url, { replicas: 3 })
  const err = await lock.acquire('repl:three').catch((e) => e)
  assert.ok(err instanceof R.LockAcquisitionError)
  assert.match(err.message, /replicas: 3 asked for, but the primary has 2 connected replicas/)
  assert.equal(await check.exists('repl:three'), 0)
  const onReplica = R.createLock(replicas[0].url, { replicas: 1 })
  await assert.rejects(onReplica.acquire('repl:replica'), /not a primary/)
  assert.throws(() => R.createLock(primary.url, { replicas: -1 }), RangeError)
  assert.throws(() => R.createLock(primary.url, { replicas: 1, replicaTimeout: 1.5 }), RangeError)
})

test('the Redisson face with { replicas }: a hold counts once acknowledged; an unacknowledged one is given back, a re-entry only undone', async () => {
  const { Redisson, RedissonLockError } = require('../redisson')
  const redisson = new Redisson({ redis: { options: { host: '127.0.0.1', port: primary.port } }, replicas: 2, replicaTimeout: 300 })
  const lock = redisson.getLock('repl-rs', 'c1')
  const field = `${redisson._id}:c1`
  try {
    assert.equal(await lock.tryLock(0, 5000), true)
    assert.equal(await command(replicas[0].port, 'HGET', 'repl-rs', field), '1', 'the replica has the hold when tryLock resolves')
    process.kill(replicas[1].pid, 'SIGSTOP')
    try {
      // A re-entry the paused replica cannot acknowledge: undone, the first hold kept.
      const t0 = Date.now()
      const err = await lock.tryLock(0, 5000).catch((e) => e)
      assert.ok(err instanceof RedissonLockError, String(err))
      assert.equal(err.code, 'ERR_NOT_REPLICATED')
      assert.match(err.message, /replicated to 1 of 2 replicas within 300 ms/)
      assert.ok(Date.now() - t0 < 1500)
      assert.equal(await check.hget('repl-rs', field), '1')
      // A first hold: given back, no key left.
      const other = redisson.getLock('repl-rs-2', 'c2')
      await assert.rejects(other.tryLock(0, 5000), { code: 'ERR_NOT_REPLICATED' })
      assert.equal(await check.exists('repl-rs-2'), 0)
      assert.equal(await other.isLocked(), false)
    } finally {
      process.kill(replicas[1].pid, 'SIGCONT')
    }
    await lock.unlock()
    assert.equal(await check.exists('repl-rs'), 0)
    // With the watchdog too.
    await lock.lock()
    assert.equal(await check.hget('repl-rs', field), '1')
    await lock.unlock()
    assert.equal(await check.exists('repl-rs'), 0)
    // More replicas than there are: refused before any write.
    const three = new Redisson({ redis: { options: { port: primary.port } }, replicas: 3 })
    await assert.rejects(three.getLock('repl-rs-3').tryLock(0, 5000), /replicas: 3 asked for, but the primary has 2/)
    assert.equal(await check.exists('repl-rs-3'), 0)
    await three.quit()
    assert.throws(() => new Redisson({ redis: { options: {} }, replicas: -1 }), RangeError)
    assert.throws(() => new Redisson({ redis: { options: {} }, replicas: 1, replicaTimeout: 0 }), RangeError)
    assert.throws(() => new Redisson({ redis: { options: {} }, replicaTimeout: 10 }), TypeError)
  } finally {
    await redisson.quit()
  }
})
