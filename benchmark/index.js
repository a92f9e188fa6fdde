'use strict'

/**
 * redislock-rs benchmark: `npm run bench` (BENCH_QUICK=1 for a smoke run).
 *
 * Starts its own redis-server on a free port, then for every scenario and
 * round runs each contender in a child process of its own (child.js; one
 * Redis connection shared by all its workers), one at a time, interleaved
 * (A B C … then B C … A, …), and reports medians. Prints the tables and the
 * targets of issue 9 (PASS / MISS) and writes benchmark/RESULTS.md and
 * RESULTS.json (BENCH_QUICK=1: benchmark/RESULTS.quick.md). Not a test: a MISS
 * does not fail it; a crash does.
 *
 * Scenarios: uncontended at 1, 16, 128 and 512 workers; contention (16
 * workers on one key, retry delay 5 and 50 ms, 1 ms critical section); a
 * MONITOR audit of the commands each contender sends; memory (memory.js);
 * and, where the machine allows it, the uncontended scenarios against a
 * redis-server in a network namespace behind a delayed veth pair (netns.js).
 *
 * Redisson face (not among issue 9's targets): redislock-rs/redisson vs
 * node-redisson 1.0.4, uncontended at 1, 16 and 128 workers, and the handoff
 * latency of 16 waiters on one lock (child.js, mode 'handoff').
 *
 * Wake on release (not among issue 9's targets): the same handoff
 * measurement for the redislock face: 16 workers on one key in one child,
 * each waiting with `retries: -1`, `delay: 50` (or its library's own retry
 * mechanism, 50 ms apart): redislock-rs with `wakeOnRelease: true`,
 * redislock-rs without it, redislock@1.3.0, redlock, redis-semaphore.
 *
 * Redlock on 3 servers (section quorum; not among issue 9's targets): 3 more
 * redis-servers (the same flags, free ports), started for the section and
 * stopped after it; uncontended at 1, 16 and 128 workers, each on its own
 * key: redislock-rs `createLock([s1, s2, s3], {timeout: 10000, retries: 0})`
 * on both engines vs redlock with one ioredis client per server
 * (retryCount 0, retryJitter 0).
 *
 * node-redlock face (section redlock-face; issue 20's targets, not issue
 * 9's): `require('redislock-rs/redlock')` on both engines vs the real
 * redlock@4.2.0, the same harness code for both (contenders.js redlockOn:
 * one ioredis client per server, one Redlock shared by the workers,
 * retryCount 0, retryJitter 0), on the main redis-server alone and on 3
 * more redis-servers started for the section (like quorum's) and stopped
 * after it: uncontended at 1, 16 and 128 workers, each on its own key
 * (lock + unlock), and contention (16 workers on one key, retryCount -1,
 * retryDelay 5 and 50 ms, 1 ms critical section; informational).
 *
 * redis-semaphore face (section semaphore-face; its own targets, not issue
 * 9's): `require('redislock-rs/semaphore')` on both engines vs the real
 * redis-semaphore@5.8.0, the same harness code for both (contenders.js
 * semaphoreOn: one ioredis client, a new lock object per cycle,
 * `refreshInterval: 0`), per lock kind (`Mutex(client, key)`,
 * `Semaphore(client, key, 5)`), on the main redis-server: uncontended at
 * 1, 16 and 128 workers, each on its own key (acquire + release), and
 * contention on the Mutex (16 workers on one key, acquireTimeout 600 s,
 * retryInterval 10 ms, 1 ms critical section; informational).
 *
 * Redisson's synchronizers (section redisson-sync, issue 23; no targets,
 * informational): on the main redis-server, the Redisson face's objects
 * beyond node-redisson, each contender in a child of its own (one
 * `new Redisson(...)` shared by its workers), interleaved rounds:
 * - read-write lock: 16 readers (`readLock().lock(10000)` + `unlock()`)
 *   and 1 writer (`writeLock().lock(10000)`, 1 ms, `unlock()`) on ONE name
 *   in one child (child.js, mode 'rw'): reader and writer cycles/s, next to
 *   the same 17 workers on `getLock` (exclusive) in the same run; and
 *   uncontended read lock, write lock and getLock (ours) and node-redisson
 *   1.0.4's getLock, `tryLock(0, 10000)` + `unlock()`, at 1 and 16
 *   workers, each on its own name;
 * - fair lock: 16 waiters on one getFairLock (child.js, mode 'handoff',
 *   `order`): handoff p50 / p99 and the share of grants that went to the
 *   longest-waiting waiter (must be 100 %), next to getLock's handoff;
 * - semaphores: getSemaphore with permits = workers / 2, acquire +
 *   release, at 16 and 128 workers on ONE semaphore (child.js, mode
 *   'shared'), next to redis-semaphore 5.8's `Semaphore(client, key,
 *   limit, { refreshInterval: 0, retryInterval: 10 })` (a new one per
 *   cycle) and this package's redislock-rs/semaphore `Semaphore` (the same
 *   code), and getPermitExpirableSemaphore `acquire(10000)` → id +
 *   `release(id)` at 16 workers.
 *
 * Redis Cluster (section cluster; not among issue 9's targets): a cluster of
 * 3 primaries, no replicas (__test__/helpers/cluster.js: free ports, the
 * same flags), started for the section and stopped after it; uncontended at
 * 1, 16 and 128 workers, each on its own key (so the keys spread over the
 * slots): redislock-rs `createLock({ cluster: [url, ...] })` vs redlock and
 * redislock@1.3.0, each over one ioredis Cluster client.
 *
 * Valkey 9 (section valkey, issue 35's targets): only when
 * scripts/valkey.js finds (or installs) a valkey-server 9.0 or later;
 * otherwise it says why and the report records the section as skipped. A
 * valkey-server of its own (startRedis({ bin }): a free port, the same
 * flags), started for the section and stopped after it; uncontended at 1,
 * 16, 128 and 512 workers, each on its own key: redislock-rs on the
 * JS-thread engine, Lua-free (the default on Valkey: DELIFEQ) and scripted
 * (REDISLOCK_RS_LUA_FREE=0 in the child: EVALSHA), vs the JavaScript
 * contenders of the uncontended section (still Lua on Valkey). Every child
 * also reads the server's CPU time (INFO cpu) around its measured interval:
 * server CPU per cycle. Targets: server CPU per cycle, Lua-free ≤ 0.7×
 * scripted at 1 and 16 workers; cycles/s at 128 and 512 workers, Lua-free
 * ≥ 1.2× scripted and ≥ 2.5× the best JS contender.
 *
 * Web Locks face (section web-locks, issue 36; no targets, informational):
 * on the main redis-server, `require('redislock-rs/web-locks')` on the
 * JS-thread engine, one `new LockManager({ host, port }, { prefix, lease:
 * 10000 })` per child shared by its workers (contenders.js webLocks),
 * interleaved rounds:
 * - uncontended at 1, 16 and 128 workers, each on its own name, a loop of
 *   `await locks.request(name, async () => {})` (exclusive) and, as
 *   another contender, of `request(name, { mode: 'shared' }, ...)`, next
 *   to the redislock face's plain lock (`createLock`, acquire + release,
 *   each worker its own key) in the same run;
 * - handoff: 16 workers in one child on ONE name, each looping an
 *   exclusive request whose callback holds it ~1 ms (child.js, mode
 *   'handoff', `order`): the time from the end of one holder's callback
 *   to the start of the next one's (p50 / p99), critical sections/s and
 *   the share of grants to the longest waiter (Web Locks is FIFO: must be
 *   100 %), next to the redislock face with `wakeOnRelease: true,
 *   retries: -1, delay: 50` (the wake section's contender and measurement);
 * - mix: 16 workers looping shared requests and 1 an exclusive one held
 *   1 ms, on ONE name (child.js, mode 'rw'), next to the same 17 workers
 *   all exclusive.
 *
 * Env: BENCH_QUICK=1, BENCH_ROUNDS=n, BENCH_DURATION_MS=n,
 *      BENCH_SECTIONS=name,name: run only these sections, in the usual order
 *        (default: all). Names: uncontended, contention, audit, redisson,
 *        wake, quorum, redlock-face, semaphore-face, redisson-sync,
 *        cluster, valkey, web-locks, memory, remote; e.g.
 *        BENCH_SECTIONS=wake or BENCH_SECTIONS=redisson,wake or
 *        BENCH_SECTIONS=cluster or BENCH_SECTIONS=valkey or
 *        BENCH_SECTIONS=web-locks. A partial run writes
 *        benchmark/RESULTS.partial.md and RESULTS.partial.json and leaves
 *        RESULTS.md / RESULTS.json alone (with BENCH_QUICK=1:
 *        RESULTS.quick.md, as always); its report and PASS / MISS lines
 *        cover the sections run only.
 *      BENCH_ONLY=id,id (contender ids, see contenders.js; redislock-rs,
 *        redisson-rs, redislock-rs-wake, redislock-rs-quorum,
 *        redislock-rs-redlock, redislock-rs-semaphore-mutex,
 *        redislock-rs-semaphore-semaphore, redislock-rs-cluster,
 *        redislock-rs-valkey-luafree, redislock-rs-valkey-scripted,
 *        redislock-rs-web-locks and redislock-rs-web-locks-shared are
 *        always run),
 *      VALKEY_SERVER=path (the valkey section's server, if 9.0 or later;
 *        see scripts/valkey.js),
 *      BENCH_NO_REDISSON=1 (skip the Redisson face), BENCH_HANDOFF_MS=n
 *        (recorded time per Redisson handoff round), BENCH_WAKE_MS=n
 *        (recorded time per wake-on-release round),
 *      BENCH_SYNC_HANDOFF_MS=n (recorded time per fair-lock handoff round),
 *      BENCH_WEB_LOCKS_HANDOFF_MS=n (recorded time per Web Locks handoff
 *        round),
 *      BENCH_NO_MEMORY=1, BENCH_NO_REMOTE=1, BENCH_REMOTE_DELAY_MS=0.2 (0: no netem)
 */

const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawn } = require('child_process')
const { startRedis } = require('../__test__/helpers/redis')
const { startCluster } = require('../__test__/helpers/cluster')
const contenders = require('./contenders')
const { summarize, summarizeGroups, summarizeHandoffs, percentile } = require('./measure')
const raw = require('./redis-raw')
const cLimit = require('./c-limit')
const netns = require('./netns')
const report = require('./report')

const QUICK = process.env.BENCH_QUICK === '1'
/** The sections, in the order they run (BENCH_SECTIONS picks some). */
const SECTIONS = ['uncontended', 'contention', 'audit', 'redisson', 'wake', 'quorum', 'redlock-face', 'semaphore-face', 'redisson-sync', 'cluster', 'valkey', 'web-locks', 'memory', 'remote']
const PICKED = process.env.BENCH_SECTIONS ? process.env.BENCH_SECTIONS.split(',').map((x) => x.trim()).filter(Boolean) : null
if (PICKED) {
  const unknown = PICKED.filter((x) => !SECTIONS.includes(x))
  if (unknown.length || !PICKED.length) {
    console.error(`[bench] BENCH_SECTIONS: unknown section(s) ${unknown.join(', ') || '(none given)'}; known: ${SECTIONS.join(', ')}`)
    process.exit(2)
  }
}
const CFG = {
  sections: SECTIONS.filter((x) => !PICKED || PICKED.includes(x)),
  partial: PICKED !== null,
  quick: QUICK,
  rounds: Number(process.env.BENCH_ROUNDS) || (QUICK ? 1 : 3),
  duration: Number(process.env.BENCH_DURATION_MS) || (QUICK ? 250 : 1500),
  warmup: QUICK ? 150 : 300,
  workers: [1, 16, 128, 512],
  remoteWorkers: [1, 16, 128],
  remoteDelayMs: process.env.BENCH_REMOTE_DELAY_MS !== undefined ? Number(process.env.BENCH_REMOTE_DELAY_MS) : 0.2,
  contentionDelays: [5, 50],
  contentionWorkers: 16,
  contentionDuration: QUICK ? 400 : 2000,
  csMs: 1,
  auditWorkers: 16,
  auditDuration: QUICK ? 200 : 300,
  memoryCycles: QUICK ? 20000 : 200000,
  memoryWorkers: 16,
  redisson: process.env.BENCH_NO_REDISSON !== '1',
  redissonWorkers: [1, 16, 128],
  handoffWorkers: 16,
  // Longer than the 10 s lease in a full run: node-redisson's wait timers
  // (one per wait, as long as the holder's remaining TTL) then fire inside it.
  handoffDuration: Number(process.env.BENCH_HANDOFF_MS) || (QUICK ? 1000 : 12000),
  handoffMin: QUICK ? 50 : 100, // per round, at least
  handoffCapExtraMs: 30000, // a round ends at handoffDuration + this at the latest
  stallMs: 100,
  wakeWorkers: 16,
  wakeDelay: 50,
  wakeDuration: Number(process.env.BENCH_WAKE_MS) || (QUICK ? 1000 : 5000),
  quorumServers: 3,
  quorumWorkers: [1, 16, 128],
  redlockFaceServers: 3,
  redlockFaceWorkers: [1, 16, 128],
  semaphoreFaceWorkers: [1, 16, 128],
  semaphoreFaceLimit: contenders.SEMAPHORE_LIMIT,
  semaphoreFaceContentionDelays: [10], // retryInterval, ms (redis-semaphore's default)
  syncRwReaders: 16,
  syncLockWorkers: [1, 16],
  syncHandoffWorkers: 16,
  syncHandoffDuration: Number(process.env.BENCH_SYNC_HANDOFF_MS) || (QUICK ? 1000 : 5000),
  syncSemaphoreWorkers: [16, 128],
  syncPesWorkers: [16],
  clusterPrimaries: 3,
  clusterWorkers: [1, 16, 128],
  valkeyWorkers: [1, 16, 128, 512],
  webLocksWorkers: [1, 16, 128],
  webLocksHandoffWorkers: 16,
  webLocksDelay: 50, // the redislock face's retry delay in the handoff (wakeOnRelease)
  webLocksHandoffDuration: Number(process.env.BENCH_WEB_LOCKS_HANDOFF_MS) || (QUICK ? 1000 : 5000),
  webLocksMixReaders: 16
}
const RUN = (section) => CFG.sections.includes(section)
const ONLY = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : null
const LIST = contenders.ALL.filter((c) => !ONLY || ONLY.includes(c.id) || c.id === report.RS)
const REDISSON_LIST = CFG.redisson && RUN('redisson') ? contenders.REDISSON.filter((c) => !ONLY || ONLY.includes(c.id) || c.id === report.REDISSON_RS) : []
const WAKE_LIST = RUN('wake') ? contenders.WAKE.filter((c) => !ONLY || ONLY.includes(c.id) || c.id === report.RS || c.id === report.RS_WAKE) : []
const QUORUM_LIST = RUN('quorum') ? contenders.QUORUM.filter((c) => !ONLY || ONLY.includes(c.id) || c.id === report.RS_QUORUM) : []
const REDLOCK_FACE_LIST = RUN('redlock-face') ? contenders.REDLOCK_FACE.filter((c) => !ONLY || ONLY.includes(c.id) || c.id === report.RS_REDLOCK) : []
const SEMAPHORE_FACE_LIST = RUN('semaphore-face') ? contenders.SEMAPHORE_FACE.filter((c) => !ONLY || ONLY.includes(c.id) || report.SEMAPHORE_FACE_RS.includes(c.id)) : []
const SYNC_ON = RUN('redisson-sync')
const syncPick = (list) => SYNC_ON ? list.filter((c) => !ONLY || ONLY.includes(c.id) || report.SYNC_RS.includes(c.id)) : []
const SYNC_RW_LIST = syncPick(contenders.SYNC_RW)
const SYNC_LOCK_LIST = syncPick([...contenders.SYNC_LOCKS, contenders.byId[report.NODE_REDISSON]])
const SYNC_FAIR_LIST = syncPick(contenders.SYNC_FAIR)
const SYNC_SHARED_LIST = syncPick(contenders.SYNC_SHARED)
const CLUSTER_LIST = RUN('cluster') ? contenders.CLUSTER.filter((c) => !ONLY || ONLY.includes(c.id) || c.id === report.RS_CLUSTER) : []
const VALKEY_LIST = RUN('valkey') ? contenders.VALKEY.filter((c) => !ONLY || ONLY.includes(c.id) || report.VALKEY_RS.includes(c.id)) : []
const WEB_LOCKS_ON = RUN('web-locks')
const webLocksPick = (list) => WEB_LOCKS_ON ? list.filter((c) => !ONLY || ONLY.includes(c.id) || report.WEB_LOCKS_RS.includes(c.id)) : []
const WEB_LOCKS_LIST = webLocksPick(contenders.WEB_LOCKS)
const WEB_LOCKS_HANDOFF_LIST = webLocksPick(contenders.WEB_LOCKS_HANDOFF)
const WEB_LOCKS_MIX_LIST = webLocksPick(contenders.WEB_LOCKS_MIX)

const log = (...a) => console.error('[bench]', ...a)
const rotate = (arr, k) => arr.map((_, i) => arr[(i + k) % arr.length])

/** Things to undo if the run is interrupted (servers, namespace, a running child). */
const cleanups = new Set()
const threads = {} // contender id -> {checked, seen: [thread names]}

// ---------------------------------------------------------------- children

/** Runs `file` with `args` in a child node with the contender's env; resolves to its last stdout line, parsed. */
function runNode (contender, file, args, timeoutMs, nodeArgs = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, path.join(__dirname, file), ...args], {
      env: { ...process.env, ...(contender.env || {}) },
      stdio: ['ignore', 'pipe', 'inherit']
    })
    const kill = () => child.kill('SIGKILL')
    cleanups.add(kill)
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    const timer = setTimeout(() => { log(`${contender.id}: child ${child.pid} timed out, killing it`); kill() }, timeoutMs)
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      cleanups.delete(kill)
      if (code !== 0) return reject(new Error(`${file} ${contender.id} exited with ${code === null ? signal : code}`))
      try { resolve(JSON.parse(out.trim().split('\n').pop())) } catch (err) { reject(new Error(`${file} ${contender.id}: bad output ${JSON.stringify(out)}`)) }
    })
  })
}

/**
 * One measurement of `contender` in its own process (see child.js for
 * `spec`); `threadsCheck`: count the threads it saw for issue 9's check
 * (`threads`; false for the sections that leave that check alone).
 */
async function measureChild (contender, spec, threadsCheck = true) {
  const timeout = spec.warmupMs + spec.durationMs + 60000
  const r = await runNode(contender, 'child.js', [JSON.stringify({ id: contender.id, ...spec })], timeout)
  if (r.ourThreads && threadsCheck) {
    const t = threads[contender.id] || (threads[contender.id] = { checked: 0, seen: [] })
    t.checked++
    for (const name of r.ourThreads) if (!t.seen.includes(name)) t.seen.push(name)
  }
  return r
}

// ---------------------------------------------------------------- scenarios

/** `c` workers on distinct keys: every contender (and the C limit) ROUNDS times, interleaved. */
async function uncontended (c, target, where) {
  const entries = [...LIST.map((x) => x.id), ...(target.sha ? [report.C_LIMIT] : [])]
  const runs = Object.fromEntries(entries.map((e) => [e, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const id of rotate(entries, round)) {
      const r = id === report.C_LIMIT
        ? await cLimit.measure({ host: target.host, port: target.port, workers: c, sha: target.sha, quick: QUICK })
        : await measureChild(contenders.byId[id], {
          host: target.host, port: target.port, mode: 'uncontended', workers: c, warmupMs: CFG.warmup, durationMs: CFG.duration, key: `bench:${where}:${id}:${c}:${round}`
        })
      runs[id].push(r)
      log(`${where} ${c} worker(s), round ${round + 1}, ${id}: ${Math.round(r.cyclesPerSec)} cycles/s`)
    }
  }
  return Object.fromEntries(entries.map((e) => [e, summarize(runs[e])]))
}

/** 16 workers on one key, retrying every `delay` ms, with a 1 ms critical section. */
async function contention (delay, target) {
  const runs = Object.fromEntries(LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const c of rotate(LIST, round)) {
      const r = await measureChild(c, {
        host: target.host, port: target.port, mode: 'contended', workers: CFG.contentionWorkers, warmupMs: 100, durationMs: CFG.contentionDuration,
        key: `bench:contended:${c.id}:${delay}:${round}`, delay, csMs: CFG.csMs
      })
      runs[c.id].push(r)
      log(`contention, delay ${delay} ms, round ${round + 1}, ${c.id}: ${Math.round(r.cyclesPerSec)} critical sections/s`)
    }
  }
  return Object.fromEntries(LIST.map((x) => [x.id, summarize(runs[x.id])]))
}

/** Redisson face: `c` workers on distinct lock names, tryLock(0, 10000) + unlock(), interleaved rounds. */
async function redissonUncontended (c, target) {
  const runs = Object.fromEntries(REDISSON_LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(REDISSON_LIST, round)) {
      const r = await measureChild(x, {
        host: target.host, port: target.port, mode: 'uncontended', workers: c, warmupMs: CFG.warmup, durationMs: CFG.duration, key: `bench:redisson:${x.id}:${c}:${round}`
      })
      runs[x.id].push(r)
      log(`redisson ${c} worker(s), round ${round + 1}, ${x.id}: ${Math.round(r.cyclesPerSec)} cycles/s`)
    }
  }
  return Object.fromEntries(REDISSON_LIST.map((x) => [x.id, summarize(runs[x.id])]))
}

/** Redisson face: 16 waiters on one lock name, time from release to the next acquisition. */
async function redissonHandoff (target) {
  const runs = Object.fromEntries(REDISSON_LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(REDISSON_LIST, round)) {
      const r = await measureChild(x, {
        host: target.host, port: target.port, mode: 'handoff', workers: CFG.handoffWorkers, warmupMs: CFG.warmup,
        durationMs: CFG.handoffDuration, minHandoffs: CFG.handoffMin, capMs: CFG.handoffDuration + CFG.handoffCapExtraMs,
        key: `bench:redisson:handoff:${x.id}:${round}`
      })
      runs[x.id].push(r)
      const stalls = r.gaps.filter((g) => g > CFG.stallMs).length
      log(`redisson handoff, round ${round + 1}, ${x.id}: ${r.handoffs} handoffs in ${r.seconds.toFixed(1)} s, ` +
        `max ${Math.max(r.gaps[r.gaps.length - 1] || 0, r.openGapMs || 0).toFixed(1)} ms, ${stalls} stall(s) > ${CFG.stallMs} ms${r.capped ? ', CAPPED' : ''}` +
        `${r.overlaps ? `, ${r.overlaps} OVERLAPPING HOLD(S): the lock was not exclusive` : ''}`)
    }
  }
  return Object.fromEntries(REDISSON_LIST.map((x) => [x.id, summarizeHandoffs(runs[x.id], CFG.stallMs)]))
}

/**
 * Wake on release (redislock face): 16 workers on one key in one child per
 * contender, each waiting (retry every 50 ms, or a release announcement
 * with wakeOnRelease), a ~0 ms hold; release to the next acquisition.
 */
async function wakeHandoff (target) {
  const runs = Object.fromEntries(WAKE_LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(WAKE_LIST, round)) {
      const r = await measureChild(x, {
        host: target.host, port: target.port, mode: 'handoff', workers: CFG.wakeWorkers, warmupMs: CFG.warmup, delay: CFG.wakeDelay,
        durationMs: CFG.wakeDuration, minHandoffs: CFG.handoffMin, capMs: CFG.wakeDuration + CFG.handoffCapExtraMs,
        key: `bench:wake:${x.id}:${round}`
      })
      runs[x.id].push(r)
      const stalls = r.gaps.filter((g) => g > CFG.stallMs).length
      log(`wake handoff, round ${round + 1}, ${x.id}: ${r.handoffs} handoffs in ${r.seconds.toFixed(1)} s (${Math.round(r.handoffsPerSec)}/s), ` +
        `p50 ${percentile(r.gaps, 0.5).toFixed(3)} ms, p99 ${percentile(r.gaps, 0.99).toFixed(3)} ms, max ${Math.max(r.gaps[r.gaps.length - 1] || 0, r.openGapMs || 0).toFixed(1)} ms, ` +
        `${stalls} stall(s) > ${CFG.stallMs} ms, ${r.handoffs + r.sameWorker ? (100 * r.sameWorker / (r.handoffs + r.sameWorker)).toFixed(1) : 'n/a'} % late arrivals (not counted)${r.capped ? ', CAPPED' : ''}` +
        `${r.overlaps ? `, ${r.overlaps} OVERLAPPING HOLD(S): the lock was not exclusive` : ''}`)
    }
  }
  return Object.fromEntries(WAKE_LIST.map((x) => [x.id, summarizeHandoffs(runs[x.id], CFG.stallMs)]))
}

/** Redlock on `servers` ({host, port} each): `c` workers on distinct keys, every quorum contender ROUNDS times, interleaved. */
async function quorumUncontended (c, servers) {
  const runs = Object.fromEntries(QUORUM_LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(QUORUM_LIST, round)) {
      const r = await measureChild(x, {
        host: servers[0].host, port: servers[0].port, servers, mode: 'uncontended', workers: c, warmupMs: CFG.warmup, durationMs: CFG.duration,
        key: `bench:quorum:${x.id}:${c}:${round}`
      })
      runs[x.id].push(r)
      log(`quorum ${c} worker(s), round ${round + 1}, ${x.id}: ${Math.round(r.cyclesPerSec)} cycles/s`)
    }
  }
  return Object.fromEntries(QUORUM_LIST.map((x) => [x.id, summarize(runs[x.id])]))
}

/**
 * Redlock on 3 servers: starts CFG.quorumServers redis-servers of its own
 * (startRedis: free ports, `--save '' --appendonly no`), runs the quorum
 * scenarios on them and stops them again (by PID, those it started only),
 * also when interrupted (cleanups).
 */
async function quorum () {
  const servers = []
  const stopAll = () => Promise.all(servers.map((s) => s.stop()))
  cleanups.add(stopAll)
  try {
    for (let i = 0; i < CFG.quorumServers; i++) servers.push(await startRedis())
    log(`quorum: redis-server pids ${servers.map((s) => s.pid).join(', ')} on ports ${servers.map((s) => s.port).join(', ')}; contenders: ${QUORUM_LIST.map((c) => c.id).join(', ')}`)
    const where = servers.map((s) => ({ host: '127.0.0.1', port: s.port }))
    const unc = {}
    for (const c of CFG.quorumWorkers) unc[c] = await quorumUncontended(c, where)
    return { servers: where.map((s) => `${s.host}:${s.port}`), uncontended: unc }
  } finally {
    cleanups.delete(stopAll)
    await stopAll()
  }
}

/** node-redlock face on `servers` ({host, port} each; one or several): `c` workers on distinct keys, every face contender ROUNDS times, interleaved. */
async function redlockFaceUncontended (c, servers) {
  const n = servers.length
  const runs = Object.fromEntries(REDLOCK_FACE_LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(REDLOCK_FACE_LIST, round)) {
      const r = await measureChild(x, {
        host: servers[0].host, port: servers[0].port, servers, mode: 'uncontended', workers: c, warmupMs: CFG.warmup, durationMs: CFG.duration,
        key: `bench:redlock-face:${n}:${x.id}:${c}:${round}`
      })
      runs[x.id].push(r)
      log(`redlock face, ${n} server(s), ${c} worker(s), round ${round + 1}, ${x.id}: ${Math.round(r.cyclesPerSec)} cycles/s`)
    }
  }
  return Object.fromEntries(REDLOCK_FACE_LIST.map((x) => [x.id, summarize(runs[x.id])]))
}

/** node-redlock face on `servers`: 16 workers on one key, retryCount -1, retryDelay `delay` ms, a 1 ms critical section. */
async function redlockFaceContention (delay, servers) {
  const n = servers.length
  const runs = Object.fromEntries(REDLOCK_FACE_LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(REDLOCK_FACE_LIST, round)) {
      const r = await measureChild(x, {
        host: servers[0].host, port: servers[0].port, servers, mode: 'contended', workers: CFG.contentionWorkers, warmupMs: 100, durationMs: CFG.contentionDuration,
        key: `bench:redlock-face:contended:${n}:${x.id}:${delay}:${round}`, delay, csMs: CFG.csMs
      })
      runs[x.id].push(r)
      log(`redlock face, ${n} server(s), contention, delay ${delay} ms, round ${round + 1}, ${x.id}: ${Math.round(r.cyclesPerSec)} critical sections/s`)
    }
  }
  return Object.fromEntries(REDLOCK_FACE_LIST.map((x) => [x.id, summarize(runs[x.id])]))
}

/** The node-redlock face's scenarios on `servers`: uncontended at every worker count, then contention at every retry delay. */
async function redlockFaceOn (servers) {
  const unc = {}
  for (const c of CFG.redlockFaceWorkers) unc[c] = await redlockFaceUncontended(c, servers)
  const cont = {}
  for (const d of CFG.contentionDelays) cont[d] = await redlockFaceContention(d, servers)
  return { servers: servers.map((s) => `${s.host}:${s.port}`), uncontended: unc, contention: cont }
}

/**
 * node-redlock face: on the main redis-server (`target`) alone, then on
 * CFG.redlockFaceServers redis-servers of its own (startRedis, as quorum()
 * does), stopped again after it (by PID, those it started only), also when
 * interrupted (cleanups). Resolves to one entry per topology.
 */
async function redlockFace (target) {
  const out = [await redlockFaceOn([{ host: target.host, port: target.port }])]
  const servers = []
  const stopAll = () => Promise.all(servers.map((s) => s.stop()))
  cleanups.add(stopAll)
  try {
    for (let i = 0; i < CFG.redlockFaceServers; i++) servers.push(await startRedis())
    log(`redlock face: redis-server pids ${servers.map((s) => s.pid).join(', ')} on ports ${servers.map((s) => s.port).join(', ')}; contenders: ${REDLOCK_FACE_LIST.map((c) => c.id).join(', ')}`)
    out.push(await redlockFaceOn(servers.map((s) => ({ host: '127.0.0.1', port: s.port }))))
    return out
  } finally {
    cleanups.delete(stopAll)
    await stopAll()
  }
}

/** redis-semaphore face, lock kind `kind`, on `target`: `c` workers on distinct keys, every contender of that kind ROUNDS times, interleaved. */
async function semaphoreFaceUncontended (kind, c, target) {
  const list = SEMAPHORE_FACE_LIST.filter((x) => x.kind === kind)
  const runs = Object.fromEntries(list.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(list, round)) {
      const r = await measureChild(x, {
        host: target.host, port: target.port, mode: 'uncontended', workers: c, warmupMs: CFG.warmup, durationMs: CFG.duration,
        key: `bench:semaphore-face:${x.id}:${c}:${round}`
      })
      runs[x.id].push(r)
      log(`semaphore face, ${kind}, ${c} worker(s), round ${round + 1}, ${x.id}: ${Math.round(r.cyclesPerSec)} cycles/s`)
    }
  }
  return Object.fromEntries(list.map((x) => [x.id, summarize(runs[x.id])]))
}

/** redis-semaphore face, Mutex: 16 workers on one key, retryInterval `delay` ms, a 1 ms critical section. */
async function semaphoreFaceContention (delay, target) {
  const list = SEMAPHORE_FACE_LIST.filter((x) => x.kind === 'mutex')
  const runs = Object.fromEntries(list.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(list, round)) {
      const r = await measureChild(x, {
        host: target.host, port: target.port, mode: 'contended', workers: CFG.contentionWorkers, warmupMs: 100, durationMs: CFG.contentionDuration,
        key: `bench:semaphore-face:contended:${x.id}:${delay}:${round}`, delay, csMs: CFG.csMs
      })
      runs[x.id].push(r)
      log(`semaphore face, mutex contention, retryInterval ${delay} ms, round ${round + 1}, ${x.id}: ${Math.round(r.cyclesPerSec)} critical sections/s`)
    }
  }
  return Object.fromEntries(list.map((x) => [x.id, summarize(runs[x.id])]))
}

/** The redis-semaphore face on the main redis-server: per kind, uncontended at every worker count; then the Mutex under contention. */
async function semaphoreFace (target) {
  const unc = {}
  for (const kind of ['mutex', 'semaphore']) {
    if (!SEMAPHORE_FACE_LIST.some((x) => x.kind === kind)) continue
    unc[kind] = {}
    for (const c of CFG.semaphoreFaceWorkers) unc[kind][c] = await semaphoreFaceUncontended(kind, c, target)
  }
  const cont = {}
  if (SEMAPHORE_FACE_LIST.some((x) => x.kind === 'mutex')) {
    for (const d of CFG.semaphoreFaceContentionDelays) cont[d] = await semaphoreFaceContention(d, target)
  }
  return { server: `${target.host}:${target.port}`, uncontended: unc, contention: cont }
}

/** One part of the redisson-sync section: every contender of `list` ROUNDS times, interleaved and rotated; `spec(x, round)` gives the child's spec, `show(r)` the log line. */
async function syncRounds (list, what, spec, show) {
  const runs = Object.fromEntries(list.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(list, round)) {
      const r = await measureChild(x, spec(x, round))
      runs[x.id].push(r)
      log(`redisson-sync, ${what}, round ${round + 1}, ${x.id}: ${show(r)}`)
    }
  }
  return runs
}

/**
 * Redisson's synchronizers (issue 23; informational, no targets), on the
 * main redis-server: the read-write lock under 16 readers + 1 writer (and
 * getLock as the exclusive baseline); uncontended read / write / getLock
 * (and node-redisson's); the fair lock's handoff and order (and getLock's);
 * semaphores shared by many workers.
 */
async function redissonSync (target) {
  const at = { host: target.host, port: target.port }
  const out = { server: `${target.host}:${target.port}`, rw: null, uncontended: {}, fair: null, shared: {} }
  if (SYNC_RW_LIST.length) {
    const runs = await syncRounds(SYNC_RW_LIST, `${CFG.syncRwReaders} readers + 1 writer`, (x, round) => ({
      ...at, mode: 'rw', workers: CFG.syncRwReaders, csMs: CFG.csMs, warmupMs: CFG.warmup, durationMs: CFG.duration, key: `bench:redisson-sync:rw:${x.id}:${round}`
    }), (r) => `readers ${Math.round(r.groups.readers.cyclesPerSec)}/s, writer ${Math.round(r.groups.writer.cyclesPerSec)}/s ` +
      `(writer p99 ${r.groups.writer.p99.toFixed(1)} ms, longest open at the deadline ${r.groups.writer.openMaxMs.toFixed(1)} ms)`)
    out.rw = Object.fromEntries(SYNC_RW_LIST.map((x) => [x.id, summarizeGroups(runs[x.id])]))
  }
  if (SYNC_LOCK_LIST.length) {
    for (const c of CFG.syncLockWorkers) {
      const runs = await syncRounds(SYNC_LOCK_LIST, `uncontended, ${c} worker(s)`, (x, round) => ({
        ...at, mode: 'uncontended', workers: c, warmupMs: CFG.warmup, durationMs: CFG.duration, key: `bench:redisson-sync:unc:${x.id}:${c}:${round}`
      }), (r) => `${Math.round(r.cyclesPerSec)} cycles/s`)
      out.uncontended[c] = Object.fromEntries(SYNC_LOCK_LIST.map((x) => [x.id, summarize(runs[x.id])]))
    }
  }
  if (SYNC_FAIR_LIST.length) {
    const runs = await syncRounds(SYNC_FAIR_LIST, `handoff, ${CFG.syncHandoffWorkers} waiters`, (x, round) => ({
      ...at, mode: 'handoff', order: true, workers: CFG.syncHandoffWorkers, warmupMs: CFG.warmup,
      durationMs: CFG.syncHandoffDuration, minHandoffs: CFG.handoffMin, capMs: CFG.syncHandoffDuration + CFG.handoffCapExtraMs,
      key: `bench:redisson-sync:handoff:${x.id}:${round}`
    }), (r) => `${r.handoffs} handoffs in ${r.seconds.toFixed(1)} s, p50 ${percentile(r.gaps, 0.5).toFixed(3)} ms, p99 ${percentile(r.gaps, 0.99).toFixed(3)} ms, ` +
      `max ${Math.max(r.gaps[r.gaps.length - 1] || 0, r.openGapMs || 0).toFixed(1)} ms, to the longest waiter ${r.inOrder}/${r.ordered}${r.capped ? ', CAPPED' : ''}` +
      `${r.overlaps ? `, ${r.overlaps} OVERLAPPING HOLD(S): the lock was not exclusive` : ''}`)
    out.fair = Object.fromEntries(SYNC_FAIR_LIST.map((x) => [x.id, summarizeHandoffs(runs[x.id], CFG.stallMs)]))
  }
  if (SYNC_SHARED_LIST.length) {
    for (const c of CFG.syncSemaphoreWorkers) {
      const list = SYNC_SHARED_LIST.filter((x) => x.kind !== 'pes' || CFG.syncPesWorkers.includes(c))
      const limit = Math.max(1, Math.floor(c / 2))
      const runs = await syncRounds(list, `semaphore, ${c} workers, ${limit} permits`, (x, round) => ({
        ...at, mode: 'shared', workers: c, limit, warmupMs: CFG.warmup, durationMs: CFG.duration, key: `bench:redisson-sync:sem:${x.id}:${c}:${round}`
      }), (r) => `${Math.round(r.cyclesPerSec)} cycles/s, p99 ${r.p99.toFixed(2)} ms`)
      out.shared[c] = { limit, results: Object.fromEntries(list.map((x) => [x.id, summarize(runs[x.id])])) }
    }
  }
  return out
}

/** A cluster whose primaries are `servers` ({host, port} each): `c` workers on distinct keys, every cluster contender ROUNDS times, interleaved. */
async function clusterUncontended (c, servers) {
  const runs = Object.fromEntries(CLUSTER_LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(CLUSTER_LIST, round)) {
      // `servers` doubles as the seed nodes and as the servers whose INFO
      // commandstats child.js sums: every primary.
      const r = await measureChild(x, {
        host: servers[0].host,
        port: servers[0].port,
        servers,
        mode: 'uncontended',
        workers: c,
        warmupMs: CFG.warmup,
        durationMs: CFG.duration,
        key: `bench:cluster:${x.id}:${c}:${round}`
      })
      runs[x.id].push(r)
      log(`cluster ${c} worker(s), round ${round + 1}, ${x.id}: ${Math.round(r.cyclesPerSec)} cycles/s`)
    }
  }
  return Object.fromEntries(CLUSTER_LIST.map((x) => [x.id, summarize(runs[x.id])]))
}

/**
 * Redis Cluster: starts a cluster of CFG.clusterPrimaries primaries, no
 * replicas (the tests' startCluster: free ports, `--save '' --appendonly
 * no`, its own temp dir, `redis-cli --cluster create`, settled once every
 * node says cluster_state:ok), runs the cluster scenarios on it and stops
 * it again (by PID, the servers it started only), also when interrupted
 * (cleanups).
 */
async function cluster () {
  const starting = startCluster({ masters: CFG.clusterPrimaries, replicas: 0 })
  // An interrupt while the cluster is being created waits for it to be up
  // (startCluster keeps its servers to itself until then; a failed start
  // stops them itself), then stops it.
  const stop = () => starting.then((cl) => cl.stop(), () => {})
  cleanups.add(stop)
  try {
    const cl = await starting
    // Interrupted meanwhile: measure nothing (interrupted() stops the cluster and exits).
    if (interrupting) throw new Error('interrupted')
    log(`cluster: redis-server pids ${cl.nodes.map((n) => n.pid).join(', ')} on ports ${cl.nodes.map((n) => n.port).join(', ')}; contenders: ${CLUSTER_LIST.map((c) => c.id).join(', ')}`)
    const where = cl.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }))
    const unc = {}
    for (const c of CFG.clusterWorkers) unc[c] = await clusterUncontended(c, where)
    return { primaries: where.map((s) => `${s.host}:${s.port}`), uncontended: unc }
  } finally {
    cleanups.delete(stop)
    await stop()
  }
}

/** Valkey: `c` workers on distinct keys, every valkey contender ROUNDS times, interleaved; each child also reads the server's CPU (INFO cpu). */
async function valkeyUncontended (c, target) {
  const runs = Object.fromEntries(VALKEY_LIST.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(VALKEY_LIST, round)) {
      const r = await measureChild(x, {
        host: target.host, port: target.port, mode: 'uncontended', workers: c, warmupMs: CFG.warmup, durationMs: CFG.duration, serverCpu: true,
        key: `bench:valkey:${x.id}:${c}:${round}`
      })
      runs[x.id].push(r)
      log(`valkey ${c} worker(s), round ${round + 1}, ${x.id}: ${Math.round(r.cyclesPerSec)} cycles/s, server CPU ${r.serverCpuUs.toFixed(2)} µs/cycle`)
    }
  }
  return Object.fromEntries(VALKEY_LIST.map((x) => [x.id, summarize(runs[x.id])]))
}

/**
 * Valkey 9: when scripts/valkey.js finds (or installs) a valkey-server 9.0
 * or later, starts one of its own (startRedis({ bin }): a free port,
 * `--save '' --appendonly no`), runs the valkey scenarios on it and stops
 * it again (by PID, the one it started only), also when interrupted
 * (cleanups). Without one, resolves to { available: false, reason }.
 */
async function valkey () {
  let bin
  try {
    bin = require('../scripts/valkey').find()
  } catch (err) {
    return { available: false, reason: `scripts/valkey.js failed: ${err.message.split('\n')[0]}` }
  }
  if (!bin) return { available: false, reason: 'no valkey-server 9.0 or later here, and scripts/valkey.js could not install one (its [valkey] line on stderr says why; VALKEY_SERVER=path names one)' }
  const servers = []
  const stopAll = () => Promise.all(servers.map((s) => s.stop()))
  cleanups.add(stopAll)
  try {
    servers.push(await startRedis({ bin }))
    const srv = servers[0]
    const info = await raw.command('127.0.0.1', srv.port, 'INFO', 'server')
    const m = /^valkey_version:(\S+)/m.exec(info)
    const version = m ? `valkey ${m[1]}` : 'valkey (version unknown)'
    log(`valkey: ${version} (${bin}) pid ${srv.pid} on port ${srv.port}; contenders: ${VALKEY_LIST.map((c) => c.id).join(', ')}`)
    const target = { host: '127.0.0.1', port: srv.port }
    const unc = {}
    for (const c of CFG.valkeyWorkers) unc[c] = await valkeyUncontended(c, target)
    return { available: true, bin, version, server: `${target.host}:${target.port}`, uncontended: unc }
  } finally {
    cleanups.delete(stopAll)
    await stopAll()
  }
}

/**
 * One part of the web-locks section: every contender of `list` ROUNDS
 * times, interleaved and rotated; `spec(x, round)` gives the child's spec,
 * `show(r)` the log line. Its children do not count towards issue 9's
 * threads check (the uncontended section's redislock-rs runs here too).
 */
async function webLocksRounds (list, what, spec, show) {
  const runs = Object.fromEntries(list.map((x) => [x.id, []]))
  for (let round = 0; round < CFG.rounds; round++) {
    for (const x of rotate(list, round)) {
      const r = await measureChild(x, spec(x, round), false)
      runs[x.id].push(r)
      log(`web-locks, ${what}, round ${round + 1}, ${x.id}: ${show(r)}`)
    }
  }
  return runs
}

/**
 * Web Locks face (issue 36; informational, no targets), on the main
 * redis-server: uncontended request() (exclusive, shared) next to the
 * redislock face's createLock; the handoff of one name under 16 waiters
 * next to createLock with wakeOnRelease; shared requests with one
 * exclusive on one name next to the same workers all exclusive.
 */
async function webLocks (target) {
  const at = { host: target.host, port: target.port }
  const out = { server: `${target.host}:${target.port}`, uncontended: {}, handoff: null, mix: null }
  if (WEB_LOCKS_LIST.length) {
    for (const c of CFG.webLocksWorkers) {
      const runs = await webLocksRounds(WEB_LOCKS_LIST, `uncontended, ${c} worker(s)`, (x, round) => ({
        ...at, mode: 'uncontended', workers: c, warmupMs: CFG.warmup, durationMs: CFG.duration, key: `bench:web-locks:unc:${x.id}:${c}:${round}`
      }), (r) => `${Math.round(r.cyclesPerSec)} cycles/s, p50 ${r.p50.toFixed(3)} ms`)
      out.uncontended[c] = Object.fromEntries(WEB_LOCKS_LIST.map((x) => [x.id, summarize(runs[x.id])]))
    }
  }
  if (WEB_LOCKS_HANDOFF_LIST.length) {
    const runs = await webLocksRounds(WEB_LOCKS_HANDOFF_LIST, `handoff, ${CFG.webLocksHandoffWorkers} waiters`, (x, round) => ({
      ...at, mode: 'handoff', order: true, workers: CFG.webLocksHandoffWorkers, warmupMs: CFG.warmup, delay: CFG.webLocksDelay,
      durationMs: CFG.webLocksHandoffDuration, minHandoffs: CFG.handoffMin, capMs: CFG.webLocksHandoffDuration + CFG.handoffCapExtraMs,
      key: `bench:web-locks:handoff:${x.id}:${round}`
    }), (r) => `${r.handoffs} handoffs in ${r.seconds.toFixed(1)} s, ${Math.round(r.csPerSec)} critical sections/s, ` +
      `p50 ${percentile(r.gaps, 0.5).toFixed(3)} ms, p99 ${percentile(r.gaps, 0.99).toFixed(3)} ms, ` +
      `max ${Math.max(r.gaps[r.gaps.length - 1] || 0, r.openGapMs || 0).toFixed(1)} ms, to the longest waiter ${r.inOrder}/${r.ordered}${r.capped ? ', CAPPED' : ''}` +
      `${r.overlaps ? `, ${r.overlaps} OVERLAPPING HOLD(S): the lock was not exclusive` : ''}`)
    out.handoff = Object.fromEntries(WEB_LOCKS_HANDOFF_LIST.map((x) => [x.id, summarizeHandoffs(runs[x.id], CFG.stallMs)]))
  }
  if (WEB_LOCKS_MIX_LIST.length) {
    const runs = await webLocksRounds(WEB_LOCKS_MIX_LIST, `mix, ${CFG.webLocksMixReaders} + 1 on one name`, (x, round) => ({
      ...at, mode: 'rw', workers: CFG.webLocksMixReaders, csMs: CFG.csMs, warmupMs: CFG.warmup, durationMs: CFG.duration, key: `bench:web-locks:mix:${x.id}:${round}`
    }), (r) => `${r.groups.readers.workers} ${contenders.byId[r.id].mode} ${Math.round(r.groups.readers.cyclesPerSec)}/s, exclusive ${Math.round(r.groups.writer.cyclesPerSec)}/s ` +
      `(exclusive p99 ${r.groups.writer.p99.toFixed(1)} ms, longest open at the deadline ${r.groups.writer.openMaxMs.toFixed(1)} ms)`)
    out.mix = Object.fromEntries(WEB_LOCKS_MIX_LIST.map((x) => [x.id, summarizeGroups(runs[x.id])]))
  }
  return out
}

/** The commands each contender sends per uncontended cycle (MONITOR), one child each. */
async function audit (target) {
  const out = {}
  for (const c of LIST) {
    out[c.id] = await measureChild(c, {
      host: target.host, port: target.port, mode: 'audit', workers: CFG.auditWorkers, warmupMs: 100, durationMs: CFG.auditDuration, key: `bench:audit:${c.id}`
    })
    log(`audit ${c.id}: ${out[c.id].sentPerCycle.toFixed(2)} commands sent per cycle`)
  }
  return out
}

async function memory (target) {
  const ids = QUICK ? [report.RS] : LIST.map((c) => c.id)
  const out = []
  for (const id of ids) {
    log(`memory: ${id}`)
    try {
      out.push(await runNode(contenders.byId[id], 'memory.js', [id, target.host, String(target.port), String(CFG.memoryCycles), String(CFG.memoryWorkers)], 240000, ['--expose-gc']))
    } catch (err) {
      out.push({ id, error: err.message.split('\n')[0] })
    }
  }
  return out
}

/** The uncontended scenarios against a redis-server in a network namespace, if this machine allows it. */
async function remote (sha) {
  if (process.env.BENCH_NO_REMOTE === '1') return { available: false, reason: 'BENCH_NO_REMOTE=1' }
  let srv
  try {
    srv = await netns.start({ delayMs: CFG.remoteDelayMs })
  } catch (err) {
    return { available: false, reason: err.message }
  }
  cleanups.add(srv.stop)
  try {
    log(`remote: ${srv.description}`)
    const target = { host: srv.host, port: srv.port, sha: await raw.command(srv.host, srv.port, 'SCRIPT', 'LOAD', contenders.DEL_IF_EQUAL) }
    const unc = {}
    for (const c of CFG.remoteWorkers) unc[c] = await uncontended(c, target, 'remote')
    return { available: true, description: srv.description, uncontended: unc, targets: report.ratioTargets(unc, 'Remote, ') }
  } finally {
    cleanups.delete(srv.stop)
    await srv.stop()
  }
}

// ---------------------------------------------------------------- main

async function main () {
  const t0 = Date.now()
  const meta = { started: new Date().toISOString(), load0: os.loadavg().map((x) => x.toFixed(2)).join(' '), machine: report.machine() }
  const server = await startRedis()
  cleanups.add(() => server.stop())
  log(`redis-server pid ${server.pid} on port ${server.port}${QUICK ? ' (QUICK mode)' : ''}; ` +
    `sections: ${CFG.sections.join(', ')}${CFG.partial ? ' (BENCH_SECTIONS)' : ''}; contenders: ${LIST.map((c) => c.id).join(', ')}; ` +
    `Redisson face: ${REDISSON_LIST.map((c) => c.id).join(', ') || 'skipped'}; wake on release: ${WAKE_LIST.map((c) => c.id).join(', ') || 'skipped'}; ` +
    `Redlock on ${CFG.quorumServers} servers: ${QUORUM_LIST.map((c) => c.id).join(', ') || 'skipped'}; ` +
    `node-redlock face: ${REDLOCK_FACE_LIST.map((c) => c.id).join(', ') || 'skipped'}; ` +
    `redis-semaphore face: ${SEMAPHORE_FACE_LIST.map((c) => c.id).join(', ') || 'skipped'}; ` +
    `Redisson's synchronizers: ${SYNC_ON ? [...new Set([...SYNC_RW_LIST, ...SYNC_LOCK_LIST, ...SYNC_FAIR_LIST, ...SYNC_SHARED_LIST].map((c) => c.id))].join(', ') : 'skipped'}; ` +
    `Redis Cluster: ${CLUSTER_LIST.map((c) => c.id).join(', ') || 'skipped'}; ` +
    `Valkey 9: ${VALKEY_LIST.map((c) => c.id).join(', ') || 'skipped'}; ` +
    `Web Locks face: ${WEB_LOCKS_ON ? [...new Set([...WEB_LOCKS_LIST, ...WEB_LOCKS_HANDOFF_LIST, ...WEB_LOCKS_MIX_LIST].map((c) => c.id))].join(', ') : 'skipped'}`)
  try {
    const needSha = RUN('uncontended') || RUN('remote')
    const sha = needSha && await cLimit.available() ? await raw.command('127.0.0.1', server.port, 'SCRIPT', 'LOAD', contenders.DEL_IF_EQUAL) : null
    if (needSha && !sha) log('redis-benchmark not found: no C-limit column')
    const target = { host: '127.0.0.1', port: server.port, sha }
    const R = { local: { uncontended: {}, contention: {}, audit: {}, memory: [] }, threads }
    if (RUN('uncontended')) for (const c of CFG.workers) R.local.uncontended[c] = await uncontended(c, target, 'local')
    if (RUN('contention')) for (const d of CFG.contentionDelays) R.local.contention[d] = await contention(d, target)
    if (RUN('audit')) R.local.audit = await audit(target)
    if (REDISSON_LIST.length) {
      R.redisson = { uncontended: {}, handoff: null }
      for (const c of CFG.redissonWorkers) R.redisson.uncontended[c] = await redissonUncontended(c, target)
      R.redisson.handoff = await redissonHandoff(target)
    } else {
      R.redisson = null
    }
    R.wake = WAKE_LIST.length ? await wakeHandoff(target) : null
    R.quorum = QUORUM_LIST.length ? await quorum() : null
    R.redlockFace = REDLOCK_FACE_LIST.length ? await redlockFace(target) : null
    R.semaphoreFace = SEMAPHORE_FACE_LIST.length ? await semaphoreFace(target) : null
    R.redissonSync = SYNC_ON ? await redissonSync(target) : null
    R.cluster = CLUSTER_LIST.length ? await cluster() : null
    R.valkey = VALKEY_LIST.length ? await valkey() : null
    if (R.valkey && !R.valkey.available) log(`valkey: skipped (${R.valkey.reason})`)
    R.webLocks = WEB_LOCKS_ON ? await webLocks(target) : null
    if (RUN('memory') && process.env.BENCH_NO_MEMORY !== '1') R.local.memory = await memory(target)
    R.remote = RUN('remote') ? await remote(sha) : { available: false, reason: 'not run (BENCH_SECTIONS)', skipped: true }
    if (!R.remote.available && !R.remote.skipped) log(`remote scenario: not available here (${R.remote.reason})`)

    meta.seconds = (Date.now() - t0) / 1000
    meta.load1 = os.loadavg().map((x) => x.toFixed(2)).join(' ')
    meta.machineAtEnd = report.machine()
    // A partial run checks only what it measured: no "not measured" rows for
    // the sections it skipped.
    const measured = (t) => !CFG.partial || t.status !== 'n/a'
    const tgs = report.targets(R).filter(measured)
    const others = report.otherChecks(R, CFG.contentionDelays)
    const rchecks = report.redissonChecks(R.redisson)
    const wchecks = report.wakeChecks(R.wake, CFG.stallMs)
    const qchecks = report.quorumChecks(R.quorum, CFG.quorumWorkers)
    const fchecks = report.redlockFaceChecks(R.redlockFace)
    const schecks = report.semaphoreFaceChecks(R.semaphoreFace)
    const vchecks = report.valkeyChecks(R.valkey)
    const text = report.render(R, tgs, others, meta, CFG, rchecks, wchecks, qchecks, fchecks, schecks, vchecks)
    const base = QUICK ? 'RESULTS.quick' : CFG.partial ? 'RESULTS.partial' : 'RESULTS'
    const file = path.join(__dirname, `${base}.md`)
    fs.writeFileSync(file, text + '\n')
    if (!QUICK) fs.writeFileSync(path.join(__dirname, `${base}.json`), JSON.stringify({ meta, cfg: CFG, R }, null, 1) + '\n')
    console.log(text)
    console.log('')
    for (const t of [...tgs, ...(R.remote.targets || [])]) console.log(`${t.status.padEnd(4)}  ${t.name} — ${t.detail}`)
    if (!R.remote.available && !R.remote.skipped) console.log(`remote scenario: not available here (${R.remote.reason})`)
    if (rchecks.length) {
      console.log('Redisson face (not among issue 9\'s targets):')
      for (const t of rchecks) console.log(`${t.status.padEnd(4)}  ${t.name} — ${t.detail}`)
    } else if (RUN('redisson')) {
      console.log(`Redisson face: ${CFG.redisson ? 'not measured' : 'skipped (BENCH_NO_REDISSON=1)'}`)
    }
    if (wchecks.length) {
      console.log('Wake on release, redislock face (not among issue 9\'s targets):')
      for (const t of wchecks) console.log(`${t.status.padEnd(4)}  ${t.name} — ${t.detail}`)
    }
    if (qchecks.length) {
      console.log(`Redlock on ${CFG.quorumServers} servers (not among issue 9's targets):`)
      for (const t of qchecks) console.log(`${t.status.padEnd(4)}  ${t.name} — ${t.detail}`)
    }
    if (fchecks.length) {
      console.log('node-redlock face, redislock-rs/redlock vs redlock@4.2.0 (issue 20\'s targets):')
      for (const t of fchecks) console.log(`${t.status.padEnd(4)}  ${t.name} — ${t.detail}`)
      for (const t of report.redlockFaceContention(R.redlockFace)) console.log(`      ${t}`)
    }
    if (schecks.length) {
      console.log(`redis-semaphore face, redislock-rs/semaphore vs redis-semaphore@${report.pkgVersion('redis-semaphore')} (targets judged on the JS-thread engine; tokio informational):`)
      for (const t of schecks) console.log(`${t.status.padEnd(4)}  ${t.name} — ${t.detail}`)
      for (const t of report.semaphoreFaceContention(R.semaphoreFace)) console.log(`      ${t}`)
    }
    if (R.redissonSync) {
      console.log('Redisson\'s synchronizers, issue 23 (informational, no target; same-run ratios):')
      for (const t of report.redissonSyncLines(R.redissonSync)) console.log(`      ${t}`)
    }
    if (R.cluster) {
      console.log(`Redis Cluster, ${CFG.clusterPrimaries} primaries (informational, no target):`)
      for (const t of report.clusterRatios(R.cluster)) console.log(`      ${t}`)
    }
    if (R.valkey && R.valkey.available) {
      console.log(`Valkey 9 (${R.valkey.version}), redislock-rs Lua-free vs scripted and the JS contenders (issue 35's targets):`)
      for (const t of vchecks) console.log(`${t.status.padEnd(4)}  ${t.name} — ${t.detail}`)
    } else if (R.valkey) {
      console.log(`Valkey 9: skipped (${R.valkey.reason})`)
    }
    if (R.webLocks) {
      console.log('Web Locks face, redislock-rs/web-locks next to the redislock face, issue 36 (informational, no target; same-run ratios):')
      for (const t of report.webLocksLines(R.webLocks)) console.log(`      ${t}`)
    }
    log(`wrote ${path.relative(process.cwd(), file)} in ${meta.seconds.toFixed(0)} s`)
  } finally {
    cleanups.clear()
    await server.stop()
  }
}

let interrupting = false
async function interrupted (signal) {
  interrupting = true
  log(`${signal}: cleaning up`)
  for (const undo of [...cleanups].reverse()) { try { await undo() } catch (_) {} }
  process.exit(130)
}
process.once('SIGINT', interrupted)
process.once('SIGTERM', interrupted)

main().then(() => process.exit(0), (err) => {
  if (interrupting) return // interrupted() exits once everything is undone
  console.error(err)
  process.exit(1)
})
