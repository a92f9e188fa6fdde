'use strict'

/**
 * Soak run over TLS with connection kills (issue 18; not a test: it prints
 * tables and PASS/FAIL lines and exits 0 unless it crashed).
 *
 * Starts its own redis-server (a plain admin port plus a TLS port, a
 * throwaway CA in a temp dir). N workers loop acquire/release over TLS on
 * keys of ~400 bytes while an admin connection on the plain port runs
 * `CLIENT KILL TYPE normal` every --kill-every ms (the admin connection
 * itself is skipped: SKIPME yes is the default). Kills stop 1 s before each
 * phase ends, so "cycles after the last kill" shows recovery.
 *
 * Every call is bounded by a 5 s watchdog (a call still pending then is
 * "stranded": counted, and its worker goes on with a new lock); a 20 ms
 * heartbeat records the event loop's longest gap per phase. After each
 * phase: GC, RSS / heap / external, thread count, the JS-thread engine's
 * own counts (engineStats(), null on tokio). Then a child process that ran
 * TLS locks under a kill must exit on its own within 10 s.
 *
 *   REDISLOCK_RS_ENGINE=js|tokio node --expose-gc benchmark/soak-tls-kills.js \
 *     [--workers 500] [--phases 3] [--seconds 40] [--kill-every 500]
 */

const { spawn } = require('child_process')
const fs = require('fs')
const { threads, settle } = require('./process-stats')
const os = require('os')
const path = require('path')
const { performance } = require('perf_hooks')
const IORedis = require('ioredis')
const { startRedis, freePort } = require('../__test__/helpers/redis')
const { makeCertificates } = require('../__test__/helpers/tls')
const ROOT = path.join(__dirname, '..')
const redislock = require(ROOT)
const native = require(path.join(ROOT, 'lib', 'native', 'loader'))

function arg (name, fallback) {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const WORKERS = arg('workers', 500)
const PHASES = arg('phases', 3)
const SECONDS = arg('seconds', 40)
const KILL_EVERY = arg('kill-every', 500)
const WATCHDOG_MS = 5000
const HEARTBEAT_MS = 20
const KILL_QUIET_MS = 1000 // no kills in the last second of a phase
const KEY_BYTES = 400
const ENGINE = process.env.REDISLOCK_RS_ENGINE || 'js'

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const mb = (n) => (n / 1048576).toFixed(1)



/** A key of KEY_BYTES bytes for worker `w`, generation `gen`. */
function keyFor (w, gen) {
  const head = `soak:tls:${w}:${gen}:`
  return head + 'k'.repeat(Math.max(0, KEY_BYTES - head.length))
}

/** "LockAcquisitionError/ERR_REDIS_CONNECTION", "LockReleaseError/none", ... */
function errorClass (err) {
  const name = (err && err.name) || typeof err
  const code = (err && err.cause && err.cause.code) || (err && err.code) || 'none'
  return `${name}/${code}`
}

// --- heartbeat: the event loop's longest gap ------------------------------
let beatLast = performance.now()
let beatMax = 0
const heartbeat = setInterval(() => {
  const t = performance.now()
  const gap = t - beatLast
  if (gap > beatMax) beatMax = gap
  beatLast = t
}, HEARTBEAT_MS)
function resetBeat () { beatLast = performance.now(); beatMax = 0 }

// --- watchdog --------------------------------------------------------------
let strandedPending = 0 // stranded calls not settled yet (whole run)

/**
 * `{ err }` when `p` settles within WATCHDOG_MS, `{ stranded: true }`
 * otherwise (counted in `ph`; a late settlement is counted too).
 */
function bounded (p, ph) {
  return new Promise((resolve) => {
    let done = false
    const timer = setTimeout(() => {
      if (done) return
      done = true
      ph.stranded++
      strandedPending++
      resolve({ stranded: true })
    }, WATCHDOG_MS)
    const finish = (err) => {
      if (done) {
        strandedPending--
        ph.lateSettled++
        return
      }
      done = true
      clearTimeout(timer)
      resolve({ err })
    }
    p.then(() => finish(null), (err) => finish(err || new Error('rejected without a reason')))
  })
}

function newPhase (n) {
  return {
    n,
    cycles: 0,
    afterFirstKill: 0,
    sinceLastKill: 0,
    kills: 0,
    killed: 0,
    killErrors: 0,
    errors: new Map(),
    stranded: 0,
    lateSettled: 0,
    freshLocks: 0,
    maxGap: 0,
    ms: 0
  }
}

function countError (ph, err) {
  const k = errorClass(err)
  ph.errors.set(k, (ph.errors.get(k) || 0) + 1)
}

function makeLock (conn) {
  return redislock.createLock(conn, { timeout: 5000, retries: 5, delay: 1 })
}

async function worker (w, conn, ph, state) {
  let lock = makeLock(conn)
  let gen = 0
  const fresh = () => { lock = makeLock(conn); gen++; ph.freshLocks++ }
  while (!state.stopping) {
    const key = keyFor(w, gen)
    let r = await bounded(lock.acquire(key), ph)
    if (r.stranded) { fresh(); continue }
    if (r.err) {
      countError(ph, r.err)
      // The SET may have landed with its reply lost: that key is ours for
      // 5 s, unreachable by a retry (SET NX). Go on with another key.
      if (r.err.cause) gen++
      if (lock._locked) fresh()
      continue
    }
    r = await bounded(lock.release(), ph)
    if (r.stranded) { fresh(); continue }
    if (r.err) {
      countError(ph, r.err)
      if (lock._locked) fresh() // still held (the DEL's fate unknown): drop it
      gen++
      continue
    }
    ph.cycles++
    ph.sinceLastKill++
    if (ph.kills > 0) ph.afterFirstKill++
  }
}

async function killer (admin, ph, state, stopAt) {
  while (!state.stopping) {
    await sleep(KILL_EVERY)
    if (state.stopping || performance.now() >= stopAt) break
    try {
      const n = await admin.client('KILL', 'TYPE', 'normal')
      ph.kills++
      ph.killed += Number(n) || 0
      ph.sinceLastKill = 0
    } catch (_) {
      ph.killErrors++
    }
  }
}

function snapshot () {
  const m = process.memoryUsage()
  let stats = null
  try { stats = native.engineStats() } catch (err) { stats = { error: String(err && err.message) } }
  // Locks whose release failed stay held as far as their objects know, so
  // they stay listed by getAcquiredLocks() (as in redislock): a held heap
  // object each, by design.
  const listed = redislock.getAcquiredLocks().length
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, threads: threads(), stats, listed }
}

function statsCell (s) {
  if (s === null || s === undefined) return 'null'
  if (s.error) return s.error
  return `timers ${s.timers}, tasks ${s.tasks}, conns ${s.connections}, buf ${s.bufferedBytes} B, lookups ${s.lookups}`
}

async function runPhase (n, conns, admin) {
  const ph = newPhase(n)
  const state = { stopping: false }
  const t0 = performance.now()
  const end = t0 + SECONDS * 1000
  resetBeat()
  const kills = killer(admin, ph, state, end - KILL_QUIET_MS)
  const workers = conns.map((conn, w) => worker(w, conn, ph, state))
  await sleep(Math.max(0, end - performance.now()))
  state.stopping = true
  await Promise.all(workers) // each bounded by the watchdog
  await kills
  ph.ms = performance.now() - t0
  ph.maxGap = beatMax
  await settle()
  Object.assign(ph, snapshot())
  return ph
}

function childExits (tlsPort, adminPort, caPath) {
  const script = `
    const fs = require('fs')
    const R = require(${JSON.stringify(ROOT)})
    const IORedis = require(${JSON.stringify(require.resolve('ioredis'))})
    const ca = fs.readFileSync(${JSON.stringify(caPath)}, 'utf8')
    const conn = { host: '127.0.0.1', port: ${tlsPort}, tls: { ca }, commandTimeout: 500, connectTimeout: 500 }
    const lock = R.createLock(conn, { timeout: 5000, retries: 5, delay: 1 })
    let ok = 0, errs = 0
    async function cycle (key) {
      try { await lock.acquire(key); await lock.release(); ok++ } catch (e) { errs++; if (lock._locked) await lock.release().catch(() => {}) }
    }
    ;(async () => {
      for (let i = 0; i < 5; i++) await cycle('soak:tls:child:' + i)
      const admin = new IORedis({ host: '127.0.0.1', port: ${adminPort}, maxRetriesPerRequest: 1 })
      await lock.acquire('soak:tls:child:held')
      await admin.client('KILL', 'TYPE', 'normal') // kills the held lock's connection
      await lock.release().then(() => ok++, () => errs++)
      admin.disconnect()
      for (let i = 5; i < 10; i++) await cycle('soak:tls:child:' + i)
      // One dropped while held: its key expires on its own.
      await R.createLock(conn, { timeout: 5000 }).acquire('soak:tls:child:dropped').then(() => ok++, () => errs++)
      console.log(JSON.stringify({ ok, errs }))
    })().catch((e) => { console.log(JSON.stringify({ crashed: String(e && e.message) })) })
  `
  return new Promise((resolve) => {
    const t0 = Date.now()
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: process.env })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    const limit = setTimeout(() => child.kill('SIGKILL'), 10000)
    child.on('exit', (code, signal) => {
      clearTimeout(limit)
      let report = null
      try { report = JSON.parse(out.trim().split('\n').pop()) } catch (_) {}
      resolve({ code, signal, ms: Date.now() - t0, report })
    })
  })
}

function printTables (phases) {
  console.log('\n| phase | s | cycles | cycles/s | after 1st kill | after last kill | kills (clients) | errors | max gap ms | stranded (late) | fresh locks | listed locks | RSS MB | heapUsed MB | external MB | threads | engineStats |')
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const p of phases) {
    const errs = [...p.errors.values()].reduce((a, b) => a + b, 0)
    console.log(`| ${p.n} | ${(p.ms / 1000).toFixed(1)} | ${p.cycles} | ${(p.cycles / (p.ms / 1000)).toFixed(0)} | ` +
      `${p.afterFirstKill} | ${p.sinceLastKill} | ${p.kills} (${p.killed})${p.killErrors ? ` +${p.killErrors} failed` : ''} | ${errs} | ` +
      `${p.maxGap.toFixed(0)} | ${p.stranded} (${p.lateSettled}) | ${p.freshLocks} | ${p.listed} | ${mb(p.rss)} | ${mb(p.heapUsed)} | ` +
      `${mb(p.external)} | ${p.threads} | ${statsCell(p.stats)} |`)
  }
  const classes = [...new Set(phases.flatMap((p) => [...p.errors.keys()]))].sort()
  if (classes.length === 0) {
    console.log('\nerrors: none')
    return
  }
  console.log(`\n| phase | ${classes.join(' | ')} |`)
  console.log(`|---:|${classes.map(() => '---:').join('|')}|`)
  for (const p of phases) console.log(`| ${p.n} | ${classes.map((c) => p.errors.get(c) || 0).join(' | ')} |`)
}

async function main () {
  if (!global.gc) console.log('(run with node --expose-gc for meaningful memory figures)')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-soak-tls-'))
  let srv = null
  let admin = null
  try {
    const { ca } = makeCertificates(dir)
    const caPath = path.join(dir, 'ca.crt')
    const adminPort = await freePort()
    const tlsPort = await freePort()
    srv = await startRedis({
      port: adminPort,
      waitPort: tlsPort,
      args: ['--tls-port', String(tlsPort),
        '--tls-cert-file', path.join(dir, 'server.crt'), '--tls-key-file', path.join(dir, 'server.key'),
        '--tls-ca-cert-file', caPath, '--tls-auth-clients', 'no', '--maxclients', '10000']
    })
    admin = new IORedis({ host: '127.0.0.1', port: adminPort, maxRetriesPerRequest: 1 })
    admin.on('error', () => {})
    await admin.ping()

    // One connection settings object per worker, as separate callers would
    // write them (equal endpoints share their connections natively).
    const conns = Array.from({ length: WORKERS }, () =>
      ({ host: '127.0.0.1', port: tlsPort, tls: { ca }, commandTimeout: 500, connectTimeout: 500 }))

    // Warm-up (no kills): the connection, the scripts, the JIT.
    const warm = makeLock(conns[0])
    for (let i = 0; i < 200; i++) { await warm.acquire(keyFor('warm', i)); await warm.release() }
    const stats = native.engineStats()
    console.log(`engine: ${ENGINE}${process.env.REDISLOCK_RS_ENGINE ? '' : ' (default)'}; ` +
      `engineStats() ${stats === null ? 'null (JS-thread engine not running)' : 'non-null (JS-thread engine running)'}`)
    console.log(`redis-server ${srv.pid}: admin port ${adminPort}, TLS port ${tlsPort}; ${WORKERS} workers, ` +
      `${PHASES} phases × ${SECONDS} s, CLIENT KILL TYPE normal every ${KILL_EVERY} ms (none in the last ${KILL_QUIET_MS} ms ` +
      `of a phase), keys of ${KEY_BYTES} bytes, watchdog ${WATCHDOG_MS} ms, Node ${process.version}, ${os.cpus().length} CPUs`)
    await settle()
    const base = snapshot()
    console.log(`after warm-up: RSS ${mb(base.rss)} MB, heapUsed ${mb(base.heapUsed)} MB, external ${mb(base.external)} MB, ` +
      `threads ${base.threads}, engineStats ${statsCell(base.stats)}`)

    const phases = []
    for (let n = 1; n <= PHASES; n++) {
      const ph = await runPhase(n, conns, admin)
      phases.push(ph)
      const errs = [...ph.errors.entries()].map(([k, v]) => `${k} ${v}`).join(', ') || 'none'
      console.log(`phase ${n}: ${ph.cycles} cycles, ${ph.kills} kills, max gap ${ph.maxGap.toFixed(0)} ms, ` +
        `stranded ${ph.stranded}, RSS ${mb(ph.rss)} MB, errors: ${errs}`)
    }

    printTables(phases)

    const first = phases[0]
    const last = phases[phases.length - 1]
    const allowance = Math.max(first.rss * 0.15, 20 * 1048576)
    const maxGap = Math.max(...phases.map((p) => p.maxGap))
    const stranded = phases.reduce((a, p) => a + p.stranded, 0)
    const checks = [
      [last.rss <= first.rss + allowance,
        `RSS flat: last phase ${mb(last.rss)} MB vs first ${mb(first.rss)} MB (allowed up to ${mb(first.rss + allowance)} MB)`],
      [maxGap < 1000, `max heartbeat gap ${maxGap.toFixed(0)} ms < 1000 ms`],
      [stranded === 0, `stranded calls: ${stranded} (still pending at the end: ${strandedPending})`],
      [phases.every((p) => p.cycles > 0), `cycles in every phase > 0 (${phases.map((p) => p.cycles).join(', ')})`],
      [last.kills > 0 && last.afterFirstKill > 0 && last.sinceLastKill > 0,
        `last phase: ${last.kills} kills, ${last.afterFirstKill} cycles after the first, ${last.sinceLastKill} after the last`]
    ]

    const child = await childExits(tlsPort, adminPort, caPath)
    checks.push([child.code === 0 && child.signal === null && child.report && child.report.ok > 0,
      `child process (TLS locks, one kill, one lock dropped while held) exited on its own: code ${child.code}` +
      `${child.signal ? `, killed by ${child.signal} after 10 s` : ''} after ${child.ms} ms, ${JSON.stringify(child.report)}`])

    console.log('')
    for (const [ok, text] of checks) console.log(`${ok ? 'PASS' : 'FAIL'} ${text}`)
  } finally {
    clearInterval(heartbeat)
    if (admin) admin.disconnect()
    if (srv) await srv.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().then(() => {
  // A soak, not a test: the result is the lines above. If anything keeps
  // the process alive now, say so rather than hang.
  setTimeout(() => {
    console.log('(the process did not exit on its own within 5 s of the end; exiting)')
    process.exit(0)
  }, 5000).unref()
}, (err) => {
  console.error(err)
  process.exitCode = 1
})
