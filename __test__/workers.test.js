'use strict'

/**
 * The addon in several Node environments at once: worker threads each load
 * it, share the process's one I/O thread and connection registry, and get
 * their own completions; terminating a worker with an operation in flight
 * leaves the others working; terminating a worker that keeps leases stops
 * its renewals at once (its keys expire by their TTL), not the others'.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('path')
const { Worker } = require('worker_threads')
const { useRedis } = require('./helpers/redis')
const { createLock } = require('..')
const { Redisson } = require('../redisson')
const { sleep } = require('./helpers/wait')

const WORKER = path.join(__dirname, 'fixtures', 'worker-thread.js')
const redis = useRedis()


function run (data) {
  const worker = new Worker(WORKER, { workerData: { url: redis.server.url, ...data } })
  const message = new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  return { worker, message }
}

test('three worker threads and the main thread lock concurrently', async () => {
  const runs = [0, 1, 2].map(() => run({ rounds: 100 }))
  const main = createLock(redis.server.url, { retries: 200, delay: 2 })
  let mainSections = 0
  for (let k = 0; k < 100; k++) {
    await main.acquire('workers:' + (k % 3))
    mainSections++
    await main.release()
  }
  const results = await Promise.all(runs.map((r) => r.message))
  for (const r of results) assert.deepEqual(r, { sections: 100, held: 0 })
  assert.equal(mainSections, 100)
})

test('terminating a worker with an acquire in flight leaves the rest working', async () => {
  const { worker, message } = run({ rounds: 10, hang: true })
  assert.deepEqual(await message, { waiting: true })
  await worker.terminate()
  const lock = createLock(redis.server.url)
  await lock.acquire('workers:after')
  assert.equal(lock._locked, true)
  await lock.release()
})

test('terminating a worker stops its kept leases at once; the main thread\'s go on', async () => {
  const LEASE = 800
  const { check } = redis
  const key = `workers:kept:${process.pid}`
  const name = `workers:watchdog:${process.pid}`
  const mine = createLock(redis.server.url, { timeout: LEASE, autoExtend: true })
  const rs = new Redisson({ redis: { options: { host: '127.0.0.1', port: redis.server.port } }, lockWatchdogTimeout: BigInt(LEASE) })
  const mineKey = `${key}:main`
  const mineName = `${name}:main`
  try {
    await mine.acquire(mineKey)
    await rs.getLock(mineName, 'main').lock()
    const { worker, message } = run({ keep: { key, name, leaseMs: LEASE, port: redis.server.port } })
    const kept = await message
    assert.equal(kept.kept, true, JSON.stringify(kept))
    // Renewed while the worker lives: held past two leases.
    await sleep(2 * LEASE)
    assert.equal(await check.get(key), kept.token)
    assert.equal(await check.exists(name), 1)
    await worker.terminate()
    await sleep(50) // a renewal sent before the end may still land
    const ended = Date.now()
    const last = { [key]: await check.pttl(key), [name]: await check.pttl(name) }
    assert.ok(last[key] > 0 && last[name] > 0, `still there right after: ${JSON.stringify(last)}`)
    // Never renewed again: each TTL only goes down, until the key is gone.
    while (last[key] > 0 || last[name] > 0) {
      assert.ok(Date.now() - ended < LEASE + 1500, `gone within the lease (+ margin), not after maxEventLoopLagMs: ${JSON.stringify(last)}`)
      await sleep(25)
      for (const k of [key, name]) {
        const pttl = await check.pttl(k)
        assert.ok(pttl <= last[k] || pttl === -2, `${k} renewed after terminate: ${last[k]} -> ${pttl}`)
        if (pttl === -2) assert.ok(last[k] <= 100 || last[k] < 0, `${k} deleted early (${last[k]} ms left), not expired`)
        last[k] = pttl
      }
    }
    // The main thread's own kept locks, renewed all along.
    assert.equal(await check.get(mineKey), mine._id)
    assert.equal(mine.signal.aborted, false)
    assert.equal(await check.exists(mineName), 1)
    await sleep(LEASE)
    assert.equal(await check.get(mineKey), mine._id)
    assert.equal(await check.exists(mineName), 1)
  } finally {
    await mine.release().catch(() => {})
    await rs.getLock(mineName, 'main').unlock().catch(() => {})
    await rs.quit()
  }
})
