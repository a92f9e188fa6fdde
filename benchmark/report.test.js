'use strict'

/**
 * Offline checks of the benchmark's report (no Redis, no children):
 * `node --test benchmark/`. Synthetic results for the semaphore-face
 * section: its PASS / MISS rows (judged on the JS-thread engine, the tokio
 * engine's ratio informational), its contention line and its markdown.
 */

const test = require('node:test')
const assert = require('node:assert')
const report = require('./report')
const contenders = require('./contenders')

const s = (cyclesPerSec, extra = {}) => ({
  cyclesPerSec, min: cyclesPerSec, max: cyclesPerSec, p50: 0.1, p99: 0.5, procCpuUs: 10, jsCpuUs: 8, callsPerCycle: 4, commands: { set: 1, evalsha: 1, get: 1, del: 1 }, ...extra
})

function fixture () {
  const unc = (kind, ours, tokio, peer) => Object.fromEntries([1, 16, 128].map((c, i) => [c, {
    [`redislock-rs-semaphore-${kind}`]: s(ours[i]),
    [`redislock-rs-semaphore-${kind}-tokio`]: s(tokio[i]),
    [`redis-semaphore-${kind}`]: s(peer[i])
  }]))
  return {
    server: '127.0.0.1:6379',
    uncontended: {
      // Mutex: 0.9× at 1 worker (MISS), 2.5× and 2× exactly (PASS)
      mutex: unc('mutex', [900, 25000, 20000], [500, 1000, 1000], [1000, 10000, 10000]),
      // Semaphore: 1× exactly, 1.99× (MISS), 3× (PASS); tokio below every target
      semaphore: unc('semaphore', [1000, 19900, 30000], [100, 100, 100], [1000, 10000, 10000])
    },
    contention: {
      10: {
        'redislock-rs-semaphore-mutex': s(600),
        'redislock-rs-semaphore-mutex-tokio': s(500),
        'redis-semaphore-mutex': s(400)
      }
    }
  }
}

test('the semaphore-face contenders: per kind, ours on both engines and redis-semaphore, all in byId', () => {
  const ids = contenders.SEMAPHORE_FACE.map((c) => c.id)
  assert.deepStrictEqual(ids, [
    'redislock-rs-semaphore-mutex', 'redislock-rs-semaphore-mutex-tokio', 'redis-semaphore-mutex',
    'redislock-rs-semaphore-semaphore', 'redislock-rs-semaphore-semaphore-tokio', 'redis-semaphore-semaphore'
  ])
  for (const c of contenders.SEMAPHORE_FACE) assert.strictEqual(contenders.byId[c.id], c)
  assert.deepStrictEqual(contenders.SEMAPHORE_FACE.map((c) => c.engine), ['js', 'tokio', undefined, 'js', 'tokio', undefined])
  assert.deepStrictEqual(report.SEMAPHORE_FACE_RS, ['redislock-rs-semaphore-mutex', 'redislock-rs-semaphore-semaphore'])
})

test('semaphoreFaceChecks: one row per kind and worker count, judged on the JS-thread engine only', () => {
  const rows = report.semaphoreFaceChecks(fixture())
  assert.strictEqual(rows.length, 6)
  assert.deepStrictEqual(rows.map((r) => r.status), ['MISS', 'PASS', 'PASS', 'PASS', 'MISS', 'PASS'])
  assert.match(rows[0].name, /Mutex ≥ 1× redis-semaphore's cycles\/s, 1 worker, JS-thread engine/)
  assert.match(rows[4].name, /Semaphore ≥ 2× redis-semaphore's cycles\/s, 16 workers, JS-thread engine/)
  assert.match(rows[4].detail, /^1\.99× \(19,900 vs 10,000 cycles\/s;/)
  // The tokio engine's ratio is reported, and does not decide the row.
  assert.match(rows[5].detail, /tokio engine 0\.01× .*informational/)
  assert.match(rows[0].detail, /process \/ JS-thread CPU µs\/cycle 10\.0 \/ 8\.0 vs 10\.0 \/ 8\.0/)
  assert.deepStrictEqual(report.semaphoreFaceChecks(null), [])
})

test('semaphoreFaceChecks: a missing contender is "not measured"', () => {
  const R = fixture()
  delete R.uncontended.mutex[16]['redis-semaphore-mutex']
  const row = report.semaphoreFaceChecks(R)[1]
  assert.strictEqual(row.status, 'n/a')
  assert.strictEqual(row.detail, 'not measured')
})

test('semaphoreFaceContention: ours ÷ redis-semaphore, informational', () => {
  const [line] = report.semaphoreFaceContention(fixture())
  assert.match(line, /retryInterval 10 ms, critical sections\/s: redis-semaphore 400; JS-thread engine 1\.50× \(600\), tokio engine 1\.25× \(500\) \(informational, no target\)/)
})

test('render: a semaphore-face-only partial run has the section, its rows and the README rows', () => {
  const R = { local: { uncontended: {}, contention: {}, audit: {}, memory: [] }, threads: {}, remote: { available: false, skipped: true }, semaphoreFace: fixture() }
  const cfg = {
    sections: ['semaphore-face'], partial: true, quick: false, rounds: 3, duration: 1500, warmup: 300, contentionWorkers: 16, contentionDuration: 2000, csMs: 1,
    semaphoreFaceWorkers: [1, 16, 128], semaphoreFaceLimit: 5
  }
  const meta = { started: 'now', seconds: 1, load0: '0', load1: '0', machine: { nproc: 2, cpu: 'x', os: 'y', node: 'v', redis: 'r', git: 'g', dirty: 0, addon: 'a', packages: 'p' } }
  const schecks = report.semaphoreFaceChecks(R.semaphoreFace)
  const text = report.render(R, [], [], meta, cfg, [], [], [], [], schecks)
  assert.match(text, /## redis-semaphore face: redislock-rs\/semaphore vs redis-semaphore@/)
  assert.match(text, /### redis-semaphore face, Mutex, uncontended: 128 workers, each on its own key/)
  assert.match(text, /### redis-semaphore face, Semaphore \(limit 5\), uncontended: 1 worker, each on its own key/)
  assert.match(text, /### redis-semaphore face, Mutex, contention: 16 workers on one key, retryInterval 10 ms/)
  assert.match(text, /a NEW lock object per cycle/)
  assert.match(text, /\| Mutex \| \*\*0\.90×\*\* \/ 0\.50× \| 2\.50× \/ 0\.10× \| 2\.00× \/ 0\.10× \|/)
  assert.match(text, /\| Semaphore \| 1\.00× \/ 0\.10× \| \*\*1\.99×\*\* \/ 0\.01× \| 3\.00× \/ 0\.01× \|/)
  assert.strictEqual((text.match(/- \*\*MISS\*\* redislock-rs\/semaphore/g) || []).length, 2)
  assert.doesNotMatch(text, /## Targets \(issue 9\)/)
  assert.doesNotMatch(text, /node-redlock face/)
})
