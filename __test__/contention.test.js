'use strict'

/**
 * Mutual exclusion: several processes, many concurrent workers, a
 * non-atomic read-modify-write in each critical section. Any overlap loses
 * an update, so the counter must equal the number of critical sections.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const { useRedis } = require('./helpers/redis')

const redis = useRedis()

function worker (workers, increments) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'contention-worker.js'),
      String(redis.server.port), String(workers), String(increments)])
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

  assert.equal(Number(await redis.check.get('contention:counter')), done)
  assert.equal(await redis.check.exists('contention:lock'), 0)
})
