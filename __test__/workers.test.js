'use strict'

/**
 * The addon in several Node environments at once: worker threads each load
 * it, share the process's one I/O thread and connection registry, and get
 * their own completions; terminating a worker with an operation in flight
 * leaves the others working.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('path')
const { Worker } = require('worker_threads')
const { startRedis } = require('./helpers/redis')
const { createLock } = require('..')

const WORKER = path.join(__dirname, 'fixtures', 'worker-thread.js')
let server

before(async () => { server = await startRedis() })
after(async () => { await server.stop() })

function run (data) {
  const worker = new Worker(WORKER, { workerData: { url: server.url, ...data } })
  const message = new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  return { worker, message }
}

test('three worker threads and the main thread lock concurrently', async () => {
  const runs = [0, 1, 2].map(() => run({ rounds: 100 }))
  const main = createLock(server.url, { retries: 200, delay: 2 })
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
  const lock = createLock(server.url)
  await lock.acquire('workers:after')
  assert.equal(lock._locked, true)
  await lock.release()
})
