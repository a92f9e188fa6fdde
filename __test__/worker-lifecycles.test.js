'use strict'

/**
 * Worker threads loading the package the ways test runners and worker
 * pools do, each scenario in a fresh `node` that has never loaded the addon
 * (fixtures/worker-lifecycle.js): only in workers, one after another; two
 * at once and more after they exited; a worker terminated with an acquire
 * of every face pending, then another; the main thread loading it last.
 * Every worker locks through every face on a real redis-server and must
 * exit on its own, and so must the process. Why: the addon once allocated
 * with mimalloc 3, and the second worker thread to load it killed the process
 * with SIGSEGV (exit 139); tests whose main thread loaded it first never
 * saw it. The engine is REDISLOCK_RS_ENGINE's, inherited by the children
 * (scripts/test-engines.js runs this once per engine). This file's own
 * thread loads the package only in its last test.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { runNode } = require('./helpers/child')
const os = require('os')
const path = require('path')
const { startRedis } = require('./helpers/redis')

const DRIVER = path.join(__dirname, 'fixtures', 'worker-lifecycle.js')
const EXIT_BOUND_MS = 30000 // the child must exit on its own by then: a failure bound, not a target
const ENGINE = process.env.REDISLOCK_RS_ENGINE || 'js'
const FACES = { redislock: true, redisson: true, redlock: true, redlock5: true, semaphore: true }
const worked = (tag) => ({ tag, engine: ENGINE, faces: FACES, exit: 0 })

let server
before(async () => { server = await startRedis() })
after(async () => { if (server) await server.stop() })

/** Runs the driver on `scenario` in a child `node` (this process's env): its exit, output and time. */
function drive (scenario) {
  return runNode([DRIVER, scenario, server.url], { boundMs: EXIT_BOUND_MS })
}

const SCENARIOS = {
  serial: ['only in workers, four one after another', ['w1', 'w2', 'w3', 'w4'].map(worked)],
  overlapping: ['two workers at once, one after both exited, then two at once again', ['w1', 'w2', 'w3', 'w4', 'w5'].map(worked)],
  terminated: ['a worker terminated with an acquire of every face pending, then another',
    [{ tag: 'hung', waiting: 5, settled: [], exit: 1 }, worked('after')]],
  'main-last': ['the main thread loads it last, after the workers that used it exited',
    [worked('w1'), worked('w2'), { tag: 'main', engine: ENGINE, faces: FACES }]]
}

for (const [scenario, [title, results]] of Object.entries(SCENARIOS)) {
  test(`${title} (engine ${ENGINE})`, async () => {
    const r = await drive(scenario)
    const said = `${r.stdout}${r.stderr}`.trim()
    assert.notEqual(r.signal, 'SIGKILL', `did not exit on its own within ${EXIT_BOUND_MS} ms: ${said}`)
    assert.equal(r.signal, null, `died of ${r.signal} (exit ${128 + os.constants.signals[r.signal]}) after ${r.ms} ms: ${said}`)
    assert.equal(r.code, 0, said)
    assert.deepEqual(JSON.parse(r.stdout), { scenario, results })
  })
}

// As node --test runs a file: its process loads the package only here. A
// crash takes this process down (node --test reports the file failed with
// SIGSEGV) and leaves the redis-server started here running.
test(`in this test process: workers first, then this thread (engine ${ENGINE})`, async () => {
  const { run, everyFace, within } = require(DRIVER) // the driver as a module: it does not load the package
  assert.deepEqual(await run(server.url, 'p1'), worked('p1'))
  assert.deepEqual(await Promise.all([run(server.url, 'p2'), run(server.url, 'p3')]), [worked('p2'), worked('p3')])
  assert.deepEqual(await within(everyFace(server.url, 'here'), 'this thread\'s faces'), { engine: ENGINE, faces: FACES })
})
