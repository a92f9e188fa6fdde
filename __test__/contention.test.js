'use strict'

/**
 * Mutual exclusion: several processes, many concurrent workers, a
 * non-atomic read-modify-write in each critical section. Any overlap loses
 * an update, so the counter must equal the number of critical sections.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const IORedis = require('ioredis')
const { startRedis } = require('./helpers/redis')

let server
before(async () => { server = await startRedis() })
after(async () => { await server.stop() })

function worker (workers, increments) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'contention-worker.js'),
      String(server.port), String(workers), String(increments)])
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    child.on('exit', (code) => code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`worker exited ${code}: ${out}`)))
  })
}

test('no lost update across 3 processes x 15 workers', async () => {
  const PROCS = 3
  const WORKERS = 15
  const INCREMENTS = 10
  const results = await Promise.all(Array.from({ length: PROCS }, () => worker(WORKERS, INCREMENTS)))
  const done = results.reduce((sum, r) => sum + r.done, 0)
  assert.equal(done, PROCS * WORKERS * INCREMENTS)

  const check = new IORedis({ port: server.port })
  try {
    assert.equal(Number(await check.get('contention:counter')), done)
    assert.equal(await check.exists('contention:lock'), 0)
  } finally {
    await check.quit()
  }
})
