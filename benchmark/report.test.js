'use strict'

/**
 * Offline checks of the benchmark's report (no Redis, no children):
 * `node --test benchmark/`. Synthetic results for the semaphore-face
 * section: its PASS / MISS rows (judged on the JS-thread engine, the tokio
 * engine's ratio informational), its contention line and its markdown; and
 * for the valkey section: its contenders, its PASS / MISS rows (the path
 * each of ours took, server CPU per cycle, cycles/s), its tables, and the
 * section skipped when there is no valkey-server; and for the web-locks
 * section: its contenders, its same-run lines (flagged when not first come,
 * first served or not exclusive) and its tables (no PASS / MISS).
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

// ---------------------------------------------------------------- redlock-face

function redlockFixture () {
  const unc = (ours, tokio, peer) => Object.fromEntries([1, 16, 128].map((c, i) => [c, {
    'redislock-rs-redlock': s(ours[i]),
    'redislock-rs-redlock-tokio': s(tokio[i]),
    'redlock-quorum': s(peer[i])
  }]))
  return [
    // 1 server: 0.99× (MISS), 2× exactly (PASS), 1.5× (MISS); tokio below every target
    { servers: ['127.0.0.1:6379'], uncontended: unc([990, 20000, 15000], [500, 5000, 5000], [1000, 10000, 10000]) },
    // 3 servers: 1× exactly, 3×, 2.5× (all PASS); tokio at 0.5×
    { servers: ['a:1', 'b:2', 'c:3'], uncontended: unc([1000, 30000, 25000], [500, 5000, 5000], [1000, 10000, 10000]) }
  ]
}

test('redlockFaceChecks: one row per topology and worker count, judged on the JS-thread engine only', () => {
  const rows = report.redlockFaceChecks(redlockFixture())
  assert.strictEqual(rows.length, 6)
  assert.deepStrictEqual(rows.map((r) => r.status), ['MISS', 'PASS', 'MISS', 'PASS', 'PASS', 'PASS'])
  assert.match(rows[0].name, /redlock ≥ 1× redlock's cycles\/s, 1 server, 1 worker, JS-thread engine$/)
  assert.match(rows[4].name, /≥ 2× redlock's cycles\/s, 3 servers, 16 workers, JS-thread engine$/)
  assert.match(rows[1].detail, /^2\.00× \(20,000 vs 10,000 cycles\/s;/)
  // The tokio engine's ratio is reported, and does not decide the row.
  assert.match(rows[4].detail, /tokio engine 0\.50× \(5,000 cycles\/s; informational\)$/)
  assert.deepStrictEqual(report.redlockFaceChecks(null), [])
  const R = redlockFixture()
  delete R[1].uncontended[128]['redislock-rs-redlock']
  const last = report.redlockFaceChecks(R)[5]
  assert.strictEqual(last.status, 'n/a')
  assert.strictEqual(last.detail, 'not measured')
})

// ---------------------------------------------------------------- redisson-sync

const { runGroups, runHandoffs } = require('./measure')

function syncFixture () {
  const g = (readers, writer, extra = {}) => ({
    runs: 3,
    procCpuUs: 100,
    jsCpuUs: 80,
    callsPerCycle: 40,
    tailMsMax: 2,
    commands: { evalsha: 2 },
    groups: {
      readers: { workers: 16, cyclesPerSec: readers, min: readers, max: readers, cycles: readers * 4, p50: 2, p99: 6, maxMs: 8, openMaxMs: 1 },
      writer: { workers: 1, cyclesPerSec: writer, min: writer, max: writer, cycles: writer * 4, p50: 2.5, p99: 9, maxMs: 12, openMaxMs: 3, ...extra }
    }
  })
  const h = (p50, p99, inOrder, ordered) => ({
    runs: 3, handoffs: ordered, seconds: 15, handoffsPerSec: 300, min: 290, max: 310, p50, p99, maxGap: 7, stalls: 0, openStalls: 0, openGapMaxMs: NaN,
    sameWorker: 0, otherHandoffs: ordered, otherP50: p50, otherP99: p99, waitP50: 20, waitP99: 40, waitMax: 50, capped: 0, overlaps: 0, procCpuUs: 900, jsCpuUs: 700, inOrder, ordered
  })
  return {
    server: '127.0.0.1:6379',
    rw: { 'redisson-rs-rw': g(6000, 360), 'redisson-rs-rw-exclusive': g(2000, 180) },
    uncontended: {
      1: { 'redisson-rs-read': s(1000), 'redisson-rs-write': s(1200), 'redisson-rs-lock': s(1500), 'node-redisson': s(1400) },
      16: { 'redisson-rs-read': s(9000), 'redisson-rs-write': s(9500), 'redisson-rs-lock': s(10000), 'node-redisson': s(8000) }
    },
    fair: { 'redisson-rs-fair': h(0.5, 4, 1000, 1000), 'redisson-rs-lock-handoff': h(0.4, 5, 120, 1000) },
    shared: {
      16: { limit: 8, results: { 'redisson-rs-semaphore': s(24000), 'redis-semaphore-shared': s(6000), 'redislock-rs-semaphore-shared': s(12000), 'redisson-rs-pes': s(12000) } },
      128: { limit: 64, results: { 'redisson-rs-semaphore': s(45000), 'redis-semaphore-shared': s(15000), 'redislock-rs-semaphore-shared': s(30000) } }
    }
  }
}

test('the redisson-sync contenders are all in byId; ours are always run', () => {
  const all = [...contenders.SYNC_RW, ...contenders.SYNC_LOCKS, ...contenders.SYNC_FAIR, ...contenders.SYNC_SHARED]
  for (const c of all) assert.strictEqual(contenders.byId[c.id], c)
  for (const id of report.SYNC_RS) assert.ok(contenders.byId[id], id)
  assert.deepStrictEqual(contenders.SYNC_SHARED.map((c) => c.id), ['redisson-rs-semaphore', 'redis-semaphore-shared', 'redislock-rs-semaphore-shared', 'redisson-rs-pes'])
})

test('redissonSyncLines: same-run ratios, informational; the fair order is flagged below 100 %', () => {
  const lines = report.redissonSyncLines(syncFixture())
  assert.strictEqual(lines.length, 6)
  assert.match(lines[0], /16 readers \+ 1 writer on one name: readers 6,000\/s, writer 360\/s; the same workers on getLock: 2,000\/s, 180\/s; sharing reads: readers 3\.00×, writer 2\.00×/)
  assert.match(lines[1], /uncontended, 1 worker, cycles\/s: read lock 1,000 \(0\.67× getLock\), write lock 1,200 \(0\.80× getLock\); getLock 1,500; node-redisson getLock 1,400/)
  assert.match(lines[3], /fair lock, 1000 handoffs: p50 \/ p99 0\.500 \/ 4\.000 ms, to the longest waiter 100\.0 % \(1,000 of 1,000\); getLock \(not fair\) 0\.400 \/ 5\.000 ms, to the longest waiter 12\.0 %/)
  assert.doesNotMatch(lines[3], /BELOW/)
  assert.match(lines[4], /16 workers, 8 permits, cycles\/s \(× redis-semaphore\): getSemaphore 24,000 \(4\.00×\), redislock-rs\/semaphore 12,000 \(2\.00×\), getPermitExpirableSemaphore 12,000 \(2\.00×\); redis-semaphore 6,000/)
  assert.doesNotMatch(lines[5], /getPermitExpirableSemaphore/)
  const R = syncFixture()
  R.fair['redisson-rs-fair'].inOrder = 999
  assert.match(report.redissonSyncLines(R)[3], /99\.9 % \(999 of 1,000\) — BELOW 100 %/)
  assert.deepStrictEqual(report.redissonSyncLines(null), [])
})

test('render: a redisson-sync-only partial run has its tables and no PASS / MISS', () => {
  const R = { local: { uncontended: {}, contention: {}, audit: {}, memory: [] }, threads: {}, remote: { available: false, skipped: true }, redissonSync: syncFixture() }
  const cfg = {
    sections: ['redisson-sync'], partial: true, quick: false, rounds: 3, duration: 1500, warmup: 300, csMs: 1, stallMs: 100,
    syncRwReaders: 16, syncHandoffWorkers: 16, syncHandoffDuration: 5000, syncSemaphoreWorkers: [16, 128], syncPesWorkers: [16]
  }
  const meta = { started: 'now', seconds: 1, load0: '0', load1: '0', machine: { nproc: 2, cpu: 'x', os: 'y', node: 'v', redis: 'r', git: 'g', dirty: 0, addon: 'a', packages: 'p' } }
  const text = report.render(R, [], [], meta, cfg)
  assert.match(text, /## Redisson's synchronizers: read-write lock, fair lock, semaphores \(issue 23; informational, no targets\)/)
  assert.match(text, /### Read-write lock: 16 readers \+ 1 writer \(1 ms held\) on one name, vs the same workers on getLock/)
  assert.match(text, /\| \*\*redislock-rs\/redisson getReadWriteLock .*\| 6,000 \(6,000–6,000\) \| 2\.000 \/ 6\.000 \| 360 \(360–360\) \| 2\.500 \/ 9\.000 \/ 12\.0 \| 3\.0 \| 100\.0 \| 80\.0 \| 40\.00 \(evalsha 2\.00\) \|/)
  assert.match(text, /### Redisson locks, uncontended: 16 workers, each on its own name/)
  assert.match(text, /\| \*\*redislock-rs\/redisson read lock, JS-thread engine\*\* \| 9,000 \(9,000–9,000\) \| 0\.90× \| 1\.13× \|/)
  assert.match(text, /### Fair lock, handoff: 16 waiters on one name/)
  assert.match(text, /grants to the longest waiter \|/)
  assert.match(text, /\| 100\.0 % \(1,000 of 1,000\) \|/)
  assert.match(text, /### Semaphores: 128 workers on one semaphore of 64 permits/)
  assert.match(text, /\| redis-semaphore@[^|]* Semaphore [^|]*\| 15,000 \(15,000–15,000\) \| 1\.00× \|/)
  assert.doesNotMatch(text, /\*\*(PASS|MISS)\*\*/)
  assert.doesNotMatch(text, /## Targets \(issue 9\)/)
})

test('runGroups: per group cycles/s; a worker that never completes in time counts 0 and shows its open wait', async () => {
  let release
  const gate = new Promise((resolve) => { release = resolve })
  const fast = { cycle: () => new Promise((resolve) => setImmediate(resolve)) }
  // Starves until the others stop, then completes: its late cycle is not counted.
  const starving = { cycle: () => gate }
  const r = await Promise.all([runGroups({ fast: [fast, fast], starving: [starving] }, 100, null), new Promise((resolve) => setTimeout(() => { release(); resolve() }, 150))]).then(([x]) => x)
  assert.ok(r.groups.fast.cycles > 10)
  assert.strictEqual(r.groups.starving.cycles, 0)
  assert.strictEqual(r.groups.starving.cyclesPerSec, 0)
  assert.ok(r.groups.starving.openMaxMs >= 90, `open ${r.groups.starving.openMaxMs}`)
  assert.ok(r.tailMs >= 30)
})

test('runHandoffs order: a first-come-first-served lock scores 100 %, a last-come-first-served one does not', async () => {
  /** A lock in this process whose waiters are served FIFO or LIFO. */
  function localLock (lifo) {
    let held = false
    const queue = []
    return () => ({
      acquire: () => new Promise((resolve) => {
        if (!held && !queue.length) { held = true; setImmediate(() => resolve(true)); return }
        queue.push(resolve)
      }),
      release: () => {
        const next = lifo ? queue.pop() : queue.shift()
        if (next) setImmediate(() => next(true)); else held = false
        return Promise.resolve()
      }
    })
  }
  const spec = { warmupMs: 20, durationMs: 100, minHandoffs: 10, capMs: 2000, order: true }
  const fifo = localLock(false)
  const a = await runHandoffs(Array.from({ length: 6 }, fifo), spec)
  assert.ok(a.ordered >= 10)
  assert.strictEqual(a.inOrder, a.ordered)
  const lifo = localLock(true)
  const b = await runHandoffs(Array.from({ length: 6 }, lifo), spec)
  assert.ok(b.inOrder < b.ordered, `${b.inOrder} of ${b.ordered}`)
})

// ---------------------------------------------------------------- valkey

const { summarize } = require('./measure')

const LUA_FREE_CMDS = { set: 1, delifeq: 1 }
const SCRIPTED_CMDS = { set: 1, evalsha: 1, get: 1, del: 1 }

function valkeyFixture () {
  // [Lua-free, scripted, js-floor, redlock] cycles/s and [Lua-free, scripted] server CPU µs per cycle, per worker count
  const rows = {
    1: [[5000, 5000, 4000, 3000], [20, 40]], // CPU 0.5× (PASS)
    16: [[80000, 80000, 20000, 15000], [8, 10]], // CPU 0.8× (MISS)
    128: [[120000, 100000, 48000, 40000], [3, 5]], // 1.2× scripted, 2.5× js-floor exactly (PASS, PASS)
    512: [[110000, 100000, 40000, 44000], [2, 4]] // 1.1× scripted (MISS), 2.5× redlock, the best JS here (PASS)
  }
  const uncontended = Object.fromEntries(Object.entries(rows).map(([c, [[a, b, floor, rl], [ca, cb]]]) => [c, {
    'redislock-rs-valkey-luafree': s(a, { serverCpuUs: ca, commands: LUA_FREE_CMDS, callsPerCycle: 2 }),
    'redislock-rs-valkey-scripted': s(b, { serverCpuUs: cb, commands: SCRIPTED_CMDS }),
    'js-floor': s(floor, { serverCpuUs: 12, commands: SCRIPTED_CMDS }),
    redlock: s(rl, { serverCpuUs: 15, commands: SCRIPTED_CMDS })
  }]))
  return { available: true, bin: '/x/valkey-server', version: 'valkey 9.1.2', server: '127.0.0.1:7000', uncontended }
}

test('the valkey contenders: ours Lua-free and scripted on the JS-thread engine, then the uncontended section\'s JS contenders, all in byId', () => {
  const ids = contenders.VALKEY.map((c) => c.id)
  const js = contenders.ALL.filter((c) => c.js)
  assert.deepStrictEqual(ids, ['redislock-rs-valkey-luafree', 'redislock-rs-valkey-scripted', ...js.map((c) => c.id)])
  assert.deepStrictEqual(report.VALKEY_RS, ids.slice(0, 2))
  const [free, scripted, ...peers] = contenders.VALKEY
  assert.deepStrictEqual(free.env, { REDISLOCK_RS_ENGINE: 'js', REDISLOCK_RS_LUA_FREE: '1' })
  assert.deepStrictEqual(scripted.env, { REDISLOCK_RS_ENGINE: 'js', REDISLOCK_RS_LUA_FREE: '0' })
  assert.deepStrictEqual([free.engine, scripted.engine, free.js, scripted.js], ['js', 'js', false, false])
  // The very same contender objects as the uncontended section's.
  peers.forEach((c, i) => assert.strictEqual(c, js[i]))
  for (const c of contenders.VALKEY) assert.strictEqual(contenders.byId[c.id], c)
})

test('summarize: the median server CPU per cycle where the runs measured it, no field where they did not', () => {
  const a = summarize([{ cyclesPerSec: 10, serverCpuUs: 3 }, { cyclesPerSec: 20, serverCpuUs: 1 }, { cyclesPerSec: 30, serverCpuUs: 2 }])
  assert.strictEqual(a.serverCpuUs, 2)
  assert.strictEqual(a.cyclesPerSec, 20)
  assert.ok(!('serverCpuUs' in summarize([{ cyclesPerSec: 10 }])))
})

test('valkeyChecks: the path check, server CPU at 1 and 16 workers, cycles/s vs scripted and vs the best JS at 128 and 512', () => {
  const rows = report.valkeyChecks(valkeyFixture())
  assert.strictEqual(rows.length, 7)
  assert.deepStrictEqual(rows.map((r) => r.status), ['PASS', 'PASS', 'MISS', 'PASS', 'PASS', 'MISS', 'PASS'])
  assert.match(rows[0].name, /Lua-free DELIFEQ 1 and no script, scripted EVALSHA 1 and no DELIFEQ/)
  assert.strictEqual(rows[0].detail, 'at 1 / 16 / 128 / 512 workers: Lua-free DELIFEQ 1.00 / 1.00 / 1.00 / 1.00, EVALSHA + EVAL 0.00 / 0.00 / 0.00 / 0.00; ' +
    'scripted EVALSHA 1.00 / 1.00 / 1.00 / 1.00, DELIFEQ 0.00 / 0.00 / 0.00 / 0.00')
  assert.strictEqual(rows[1].name, 'Valkey, 1 worker: server CPU per uncontended cycle, Lua-free ≤ 0.7× scripted')
  assert.match(rows[1].detail, /^20\.00 vs 40\.00 µs = 0\.50× \(at 5,000 vs 5,000 cycles\/s\)$/)
  assert.match(rows[2].detail, /^8\.00 vs 10\.00 µs = 0\.80×/)
  assert.strictEqual(rows[3].name, 'Valkey, 128 workers: cycles/s, Lua-free ≥ 1.2× scripted')
  assert.match(rows[3].detail, /^1\.20× \(120,000 vs 100,000 cycles\/s;/)
  assert.strictEqual(rows[4].name, 'Valkey, 128 workers: cycles/s, Lua-free ≥ 2.5× the best JS contender')
  assert.strictEqual(rows[4].detail, '2.50× js-floor (120,000 vs 48,000 cycles/s); scripted 2.08×')
  assert.match(rows[5].detail, /^1\.10× /)
  // The best JS contender is taken per table: redlock at 512 workers.
  assert.strictEqual(rows[6].detail, '2.50× redlock (110,000 vs 44,000 cycles/s); scripted 2.27×')
})

test('valkeyChecks: a wrong path is a MISS naming the worker counts; no server CPU or a missing contender is "not measured"; skipped or not run: no rows', () => {
  const R = valkeyFixture()
  R.uncontended[16]['redislock-rs-valkey-luafree'].commands = SCRIPTED_CMDS
  delete R.uncontended[1]['redislock-rs-valkey-scripted'].serverCpuUs
  delete R.uncontended[512]['redislock-rs-valkey-scripted']
  const rows = report.valkeyChecks(R)
  assert.strictEqual(rows[0].status, 'MISS')
  assert.match(rows[0].detail, /at 1 \/ 16 \/ 128 workers: .*; WRONG PATH at 16 workers$/)
  assert.strictEqual(rows[1].status, 'n/a')
  assert.strictEqual(rows[1].detail, 'not measured')
  assert.strictEqual(rows[5].status, 'n/a')
  // vs the best JS: still judged, without the scripted aside
  assert.strictEqual(rows[6].detail, '2.50× redlock (110,000 vs 44,000 cycles/s)')
  assert.deepStrictEqual(report.valkeyChecks(null), [])
  assert.deepStrictEqual(report.valkeyChecks({ available: false, reason: 'no valkey-server' }), [])
})

const valkeyCfg = { sections: ['valkey'], partial: true, quick: true, rounds: 1, duration: 250, warmup: 150, valkeyWorkers: [1, 16, 128, 512] }
const valkeyMeta = { started: 'now', seconds: 1, load0: '0', load1: '0', machine: { nproc: 2, cpu: 'x', os: 'y', node: 'v', redis: 'r', git: 'g', dirty: 0, addon: 'a', packages: 'p' } }

test('render: a valkey-only partial run has the section, a table per worker count with the server CPU column, and its rows', () => {
  const R = { local: { uncontended: {}, contention: {}, audit: {}, memory: [] }, threads: {}, remote: { available: false, skipped: true }, valkey: valkeyFixture() }
  const text = report.render(R, [], [], valkeyMeta, valkeyCfg, [], [], [], [], [], report.valkeyChecks(R.valkey))
  assert.match(text, /## Valkey 9: redislock-rs Lua-free vs scripted, and the JavaScript contenders \(issue 35\)/)
  assert.match(text, /valkey 9\.1\.2, `\/x\/valkey-server`/)
  assert.match(text, /server CPU per cycle, Lua-free ≤ 0\.7× scripted at 1 worker, ≤ 0\.7× scripted at 16 workers; cycles\/s, Lua-free ≥ 1\.2× scripted and ≥ 2\.5× the best JS contender at 128 workers/)
  for (const c of ['1 worker', '16 workers', '128 workers', '512 workers']) assert.match(text, new RegExp(`### Valkey, uncontended: ${c}, each on its own key`))
  assert.match(text, /\| contender \| cycles\/s median \(min–max\) \| × scripted \| × best JS \| p50 ms \| p99 ms \| server CPU µs\/cycle \(INFO cpu\) \|/)
  // 128 workers: ours bold, × scripted, × best JS (js-floor), server CPU, commands
  assert.match(text, /\| \*\*redislock-rs on Valkey, Lua-free [^|]*\*\* \| 120,000 \(120,000–120,000\) \| 1\.20× \| 2\.50× \| 0\.100 \| 0\.500 \| 3\.00 \| 10\.0 \| 8\.0 \| 2\.00 \(set 1\.00, delifeq 1\.00\) \|/)
  assert.match(text, /\| JS floor: raw ioredis SET NX \+ EVALSHA \| 48,000 \(48,000–48,000\) \| 0\.48× \| 1\.00× \| 0\.100 \| 0\.500 \| 12\.00 \|/)
  assert.strictEqual((text.match(/- \*\*MISS\*\* Valkey/g) || []).length, 2)
  assert.strictEqual((text.match(/- \*\*PASS\*\* /g) || []).length, 5)
  assert.doesNotMatch(text, /## Targets \(issue 9\)/)
  assert.doesNotMatch(text, /redis-semaphore face/)
})

test('render: the valkey section skipped says why, with no table and no rows', () => {
  const R = { local: { uncontended: {}, contention: {}, audit: {}, memory: [] }, threads: {}, remote: { available: false, skipped: true }, valkey: { available: false, reason: 'no valkey-server 9.0 or later here' } }
  const text = report.render(R, [], [], valkeyMeta, valkeyCfg, [], [], [], [], [], report.valkeyChecks(R.valkey))
  assert.match(text, /## Valkey 9: redislock-rs Lua-free vs scripted[^\n]*\n\nSkipped: no valkey-server 9\.0 or later here\.\n/)
  assert.doesNotMatch(text, /### Valkey/)
  assert.doesNotMatch(text, /\*\*(PASS|MISS)\*\*/)
})

// ---------------------------------------------------------------- web-locks

function webLocksFixture () {
  const h = (p50, p99, csPerSec, inOrder, ordered, extra = {}) => ({
    runs: 3, handoffs: ordered, seconds: 15, handoffsPerSec: csPerSec, min: csPerSec, max: csPerSec, csPerSec, p50, p99, maxGap: 7, stalls: 0, openStalls: 0, openGapMaxMs: NaN,
    sameWorker: 0, otherHandoffs: ordered, otherP50: p50, otherP99: p99, waitP50: 20, waitP99: 40, waitMax: 50, capped: 0, overlaps: 0, procCpuUs: 400, jsCpuUs: 300, inOrder, ordered, ...extra
  })
  const g = (readers, writer) => ({
    runs: 3,
    procCpuUs: 100,
    jsCpuUs: 60,
    callsPerCycle: 50,
    tailMsMax: 2,
    commands: { evalsha: 4 },
    groups: {
      readers: { workers: 16, cyclesPerSec: readers, min: readers, max: readers, cycles: readers * 4, p50: 3, p99: 12, maxMs: 15, openMaxMs: 1 },
      writer: { workers: 1, cyclesPerSec: writer, min: writer, max: writer, cycles: writer * 4, p50: 3.5, p99: 14, maxMs: 16, openMaxMs: 2 }
    }
  })
  const unc = (ex, sh, rs) => ({ 'redislock-rs-web-locks': s(ex), 'redislock-rs-web-locks-shared': s(sh), 'redislock-rs': s(rs) })
  return {
    server: '127.0.0.1:6379',
    uncontended: { 1: unc(4000, 3000, 16000), 16: unc(12000, 10000, 60000), 128: unc(12000, 12000, 100000) },
    handoff: { 'redislock-rs-web-locks': h(0.5, 2.5, 560, 1500, 1500), 'redislock-rs-wake': h(0.25, 1.75, 700, 300, 1800) },
    mix: { 'redislock-rs-web-locks-shared': g(4000, 250), 'redislock-rs-web-locks': g(1000, 50) }
  }
}

const webLocksCfg = {
  sections: ['web-locks'], partial: true, quick: false, rounds: 3, duration: 1500, warmup: 300, csMs: 1, stallMs: 100, handoffMin: 100, handoffCapExtraMs: 30000,
  webLocksWorkers: [1, 16, 128], webLocksHandoffWorkers: 16, webLocksDelay: 50, webLocksHandoffDuration: 5000, webLocksMixReaders: 16
}
const webLocksMeta = { started: 'now', seconds: 1, load0: '0', load1: '0', machine: { nproc: 2, cpu: 'x', os: 'y', node: 'v', redis: 'r', git: 'g', dirty: 0, addon: 'a', packages: 'p' } }

test('the web-locks contenders: ours exclusive and shared on the JS-thread engine, next to the redislock face\'s plain lock and wakeOnRelease, all in byId', () => {
  assert.deepStrictEqual(contenders.WEB_LOCKS.map((c) => c.id), ['redislock-rs-web-locks', 'redislock-rs-web-locks-shared', 'redislock-rs'])
  assert.deepStrictEqual(contenders.WEB_LOCKS_HANDOFF.map((c) => c.id), ['redislock-rs-web-locks', 'redislock-rs-wake'])
  assert.deepStrictEqual(contenders.WEB_LOCKS_MIX.map((c) => c.id), ['redislock-rs-web-locks-shared', 'redislock-rs-web-locks'])
  assert.deepStrictEqual(report.WEB_LOCKS_RS, ['redislock-rs-web-locks', 'redislock-rs-web-locks-shared'])
  const [ex, sh] = contenders.WEB_LOCKS
  assert.deepStrictEqual([ex.mode, sh.mode, ex.engine, sh.engine, ex.js, sh.js], ['exclusive', 'shared', 'js', 'js', false, false])
  assert.deepStrictEqual(ex.env, { REDISLOCK_RS_ENGINE: 'js' })
  // The very same objects as the uncontended and wake sections' redislock-rs.
  assert.strictEqual(contenders.WEB_LOCKS[2], contenders.ALL[0])
  assert.strictEqual(contenders.WEB_LOCKS_HANDOFF[1], contenders.WAKE[0])
  for (const c of [...contenders.WEB_LOCKS, ...contenders.WEB_LOCKS_HANDOFF, ...contenders.WEB_LOCKS_MIX]) assert.strictEqual(contenders.byId[c.id], c)
})

test('webLocksLines: same-run ratios to createLock, the handoff next to wakeOnRelease, the mix; informational', () => {
  const lines = report.webLocksLines(webLocksFixture())
  assert.strictEqual(lines.length, 5)
  assert.strictEqual(lines[0], 'uncontended, 1 worker, cycles/s: request() exclusive 4,000 (0.25× createLock), shared 3,000 (0.19× createLock); createLock acquire + release 16,000')
  assert.match(lines[2], /^uncontended, 128 workers, cycles\/s: request\(\) exclusive 12,000 \(0\.12× createLock\), shared 12,000 \(0\.12× createLock\); createLock acquire \+ release 100,000$/)
  assert.strictEqual(lines[3], 'handoff, 1,500 handoffs: request() p50 / p99 0.500 / 2.500 ms, 560 critical sections/s, to the longest waiter 100.0 % (1,500 of 1,500); ' +
    'createLock wakeOnRelease 0.250 / 1.750 ms, 700 critical sections/s (p50 2.00×, critical sections/s 0.80×)')
  assert.strictEqual(lines[4], 'mix, 16 shared + 1 exclusive on one name: shared 4,000/s, exclusive 250/s; the same workers all exclusive: 1,000/s, 50/s; sharing: the 16 4.00×, the exclusive one 5.00×')
  assert.doesNotMatch(lines.join('\n'), /BELOW|OVERLAPPING|\*\*(PASS|MISS)\*\*/)
  assert.deepStrictEqual(report.webLocksLines(null), [])
})

test('webLocksLines: a handoff not first come, first served or not exclusive is flagged; a part not measured has no line', () => {
  const R = webLocksFixture()
  Object.assign(R.handoff['redislock-rs-web-locks'], { inOrder: 1499, overlaps: 2 })
  delete R.handoff['redislock-rs-wake']
  R.mix = null
  const lines = report.webLocksLines(R)
  assert.strictEqual(lines.length, 4)
  assert.match(lines[3], /to the longest waiter 99\.9 % \(1,499 of 1,500\) — BELOW 100 %: not first come, first served; 2 OVERLAPPING HOLD\(S\): not exclusive; createLock wakeOnRelease n\/a$/)
})

test('render: a web-locks-only partial run has the section, a table per scenario and its lines, no PASS / MISS', () => {
  const R = { local: { uncontended: {}, contention: {}, audit: {}, memory: [] }, threads: {}, remote: { available: false, skipped: true }, webLocks: webLocksFixture() }
  const text = report.render(R, [], [], webLocksMeta, webLocksCfg)
  assert.match(text, /## Web Locks face: redislock-rs\/web-locks next to the redislock face \(issue 36; informational, no targets\)/)
  assert.match(text, /`new LockManager\(\{ host, port \}, \{ prefix: 'weblocks:bench:', lease: 10000 \}\)`/)
  assert.match(text, /`createLock\(\{host, port\}, \{timeout: 10000, retries: -1, delay: 50, wakeOnRelease: true\}\)`/)
  for (const c of ['1 worker', '16 workers', '128 workers']) assert.match(text, new RegExp(`### Web Locks, uncontended: ${c}, each on its own name`))
  assert.match(text, /\| contender \| cycles\/s median \(min–max\) \| × createLock \| p50 ms \| p99 ms \|/)
  assert.match(text, /\| \*\*redislock-rs\/web-locks LockManager, exclusive, JS-thread engine\*\* \| 12,000 \(12,000–12,000\) \| 0\.20× \| 0\.100 \| 0\.500 \| 10\.0 \| 8\.0 \| 4\.00 \(/)
  assert.match(text, /\| \*\*redislock-rs, JS-thread engine\*\* \| 60,000 \(60,000–60,000\) \| 1\.00× \|/)
  // The handoff: critical sections/s and the grants to the longest waiter, for both.
  assert.match(text, /### Web Locks, handoff: 16 workers on one name, ~1 ms hold, vs createLock with wakeOnRelease/)
  assert.match(text, /\| handoffs\/s median \(min–max\) \| critical sections\/s median \| handoff p50 ms \| .*\| grants to the longest waiter \| wait in request \/ acquire p50 \/ p99 \/ max ms \|/)
  assert.match(text, /\| \*\*redislock-rs\/web-locks LockManager, exclusive, JS-thread engine\*\* \| 1,500 \(3, 15\.0 s\) \| 560 \(560–560\) \| 560 \| 0\.500 \| 2\.500 \| 7\.0 \| 0 \| 0\.0 % \| 100\.0 % \(1,500 of 1,500\) \| 20\.00 \/ 40\.0 \/ 50\.0 \| 400\.0 \|/)
  assert.match(text, /\| \*\*redislock-rs, JS-thread engine, wakeOnRelease: true\*\* \| 1,800 \(3, 15\.0 s\) \| 700 \(700–700\) \| 700 \| 0\.250 \| 1\.750 \| .*\| 16\.7 % \(300 of 1,800\) \|/)
  // The header row and its alignment row have as many columns.
  const handoff = text.split('### Web Locks, handoff')[1].split('\n').filter((l) => l.startsWith('|'))
  assert.strictEqual(handoff[0].split('|').length, handoff[1].split('|').length)
  assert.strictEqual(handoff[0].split('|').length, handoff[2].split('|').length)
  assert.match(text, /### Web Locks, mix: 16 shared \+ 1 exclusive \(1 ms held\) on one name, vs the same workers all exclusive/)
  assert.match(text, /\| \*\*redislock-rs\/web-locks LockManager, shared, JS-thread engine\*\* \| 4,000 \(4,000–4,000\) \| 3\.000 \/ 12\.000 \| 250 \(250–250\) \| 3\.500 \/ 14\.000 \/ 16\.0 \| 2\.0 \|/)
  assert.match(text, /- mix, 16 shared \+ 1 exclusive on one name: .*sharing: the 16 4\.00×, the exclusive one 5\.00×/)
  assert.doesNotMatch(text, /\*\*(PASS|MISS)\*\*/)
  assert.doesNotMatch(text, /## Targets \(issue 9\)/)
  assert.doesNotMatch(text, /## Valkey 9|redis-semaphore face|## Wake on release/)
})

test('the other handoff tables are unchanged by the critical-sections column', () => {
  const R = { local: { uncontended: {}, contention: {}, audit: {}, memory: [] }, threads: {}, remote: { available: false, skipped: true }, redissonSync: syncFixture() }
  const cfg = { sections: ['redisson-sync'], partial: true, quick: false, rounds: 3, duration: 1500, warmup: 300, csMs: 1, stallMs: 100, syncRwReaders: 16, syncHandoffWorkers: 16, syncHandoffDuration: 5000, syncSemaphoreWorkers: [16, 128], syncPesWorkers: [16] }
  const text = report.render(R, [], [], webLocksMeta, cfg)
  assert.doesNotMatch(text, /critical sections\/s median \|/)
  assert.match(text, /\| handoffs\/s median \(min–max\) \| handoff p50 ms \|/)
})

test('runHandoffs csPerSec: every acquisition while recording, handoffs and late arrivals', async () => {
  let held = false
  const queue = []
  const make = () => ({
    acquire: () => new Promise((resolve) => {
      if (!held && !queue.length) { held = true; setImmediate(() => resolve(true)); return }
      queue.push(resolve)
    }),
    release: () => {
      const next = queue.shift()
      if (next) setImmediate(() => next(true)); else held = false
      return Promise.resolve()
    }
  })
  const r = await runHandoffs(Array.from({ length: 4 }, make), { warmupMs: 20, durationMs: 100, minHandoffs: 10, capMs: 2000 })
  assert.ok(r.handoffs >= 10)
  assert.strictEqual(Math.round(r.csPerSec * r.seconds), r.handoffs + r.sameWorker)
  const { summarizeHandoffs } = require('./measure')
  assert.strictEqual(summarizeHandoffs([r, { ...r, csPerSec: 1 }, { ...r, csPerSec: 2 }], 100).csPerSec, 2)
})
