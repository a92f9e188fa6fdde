'use strict'

/**
 * A real worker-pool test runner on our package, as a user's project runs
 * it: ava (a worker thread per test file, one and then two at a time) runs
 * the small suite in __test__/pool/ (every face locks and releases) against
 * a redis-server started here; it must pass every test and exit 0 on its
 * own. Why: the addon once allocated with mimalloc 3, and the second worker
 * thread to load it killed the process with SIGSEGV, taking ava (and
 * Piscina, vitest pools) down. The engine is REDISLOCK_RS_ENGINE's,
 * inherited by ava and its workers.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { runNode } = require('./helpers/child')
const path = require('path')
const { startRedis } = require('./helpers/redis')

const ROOT = path.join(__dirname, '..')
const EXIT_BOUND_MS = 60000 // a failure bound, not a timing target
const EXPECTED = [
  'faces-a › redislock: acquire excludes a second lock, release frees the key',
  'faces-a › Redisson: lock, isLocked, unlock',
  'faces-b › redlock 4: lock excludes a second lock, unlock frees the key',
  'faces-b › node-redlock 5: acquire excludes a second acquire, release frees the key',
  'faces-c › Mutex: acquire excludes a second one, release frees the key',
  'faces-c › Semaphore: two holders of two permits, a third is refused'
]

let server
before(async () => { server = await startRedis() })
after(async () => { if (server) await server.stop() })

/** Runs ava on __test__/pool (its config there) `concurrency` files at a time: exit, output, time. */
async function ava (concurrency) {
  const cli = path.join(ROOT, 'node_modules', 'ava', 'entrypoints', 'cli.mjs')
  const config = path.join(__dirname, 'pool', 'ava.config.mjs')
  const r = await runNode([cli, '--config', config, '--concurrency', String(concurrency)], {
    cwd: ROOT,
    env: { ...process.env, REDISLOCK_RS_POOL_URL: server.url },
    boundMs: EXIT_BOUND_MS
  })
  return { ...r, out: r.stdout + r.stderr }
}

// One at a time: each new worker thread follows one that has exited; two
// at a time: they also overlap.
for (const concurrency of [1, 2]) {
  test(`ava, a worker thread per test file, ${concurrency} at a time, passes every test of every face (engine ${process.env.REDISLOCK_RS_ENGINE || 'js'})`, async () => {
    const r = await ava(concurrency)
    assert.notEqual(r.signal, 'SIGKILL', `ava did not exit on its own within ${EXIT_BOUND_MS} ms:\n${r.out}`)
    assert.equal(r.signal, null, `ava died of ${r.signal} after ${r.ms} ms:\n${r.out}`)
    assert.equal(r.code, 0, r.out)
    const passed = r.out.match(/^\s*(\d+) tests? passed$/m)
    assert.equal(passed && Number(passed[1]), EXPECTED.length, r.out)
    const titles = [...r.out.matchAll(/^\s*✔ (.+?)(?: \([\d.]+m?s\))?$/gm)].map((m) => m[1]).sort() // without ava's "(132ms)"
    assert.deepEqual(titles, [...EXPECTED].sort(), r.out)
  })
}
