'use strict'

/**
 * redislock-rs benchmark: `npm run bench` (BENCH_QUICK=1 for a smoke run).
 *
 * Starts its own redis-server on a free port, runs every contender in the
 * same process, interleaved (A B C … A B C …, start rotated each round),
 * repeats each measurement, and writes benchmark/RESULTS.md (the quick mode
 * writes benchmark/RESULTS.quick.md). Not a test: it never fails for being
 * slow; it prints a pass/miss line per target.
 *
 * Env: BENCH_QUICK=1, BENCH_ROUNDS=n, BENCH_DURATION_MS=n,
 *      BENCH_ONLY=id,id (contender ids, see contenders.js), BENCH_NO_MEMORY=1
 */

const fs = require('fs')
const os = require('os')
const path = require('path')
const { execFileSync, execFile } = require('child_process')
const { startRedis } = require('../__test__/helpers/redis')
const contenders = require('./contenders')
const { runWorkers, summarize } = require('./measure')
const cLimit = require('./c-limit')

const QUICK = process.env.BENCH_QUICK === '1'
const ROUNDS = Number(process.env.BENCH_ROUNDS) || (QUICK ? 1 : 3)
const DURATION = Number(process.env.BENCH_DURATION_MS) || (QUICK ? 300 : 1500)
const CONTENTION_DURATION = QUICK ? 600 : 2000
const WARMUP = QUICK ? 150 : 300
const PARALLEL = [16, 128, 512]
const DELAYS = [5, 50]
const CS_MS = 1
const MEMORY_CYCLES = QUICK ? 20000 : 200000
const MEMORY_WORKERS = 16
const ONLY = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : null
const JS_IDS = ['redislock', 'redlock', 'redis-semaphore', 'js-floor']
const RS = 'redislock-rs'

const log = (...a) => console.error('[bench]', ...a)
const list = contenders.ALL.filter((c) => !ONLY || ONLY.includes(c.id) || c.id === RS)

function rotate (arr, k) {
  const n = arr.length
  return arr.map((_, i) => arr[(i + k) % n])
}

// ---------------------------------------------------------------- scenarios

/**
 * An uncontended scenario: `c` workers on distinct keys. Every contender and
 * the two C-limit variants are measured ROUNDS times, interleaved.
 */
async function uncontended (name, c, ctx) {
  const { opened, admin, port, sha } = ctx
  log(`${name}: warm-up`)
  for (const [id, inst] of opened) {
    const ws = Array.from({ length: c }, (_, i) => inst.worker(`bench:${id}:warm:${c}:${i}`))
    await runWorkers(ws, WARMUP, null)
  }
  const entries = [...opened.keys(), 'c-limit', 'c-limit-p16']
  const runs = Object.fromEntries(entries.map((e) => [e, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const id of rotate(entries, round)) {
      let r
      if (id.startsWith('c-limit')) {
        r = await cLimit.measure({ port, c, pipeline: id === 'c-limit-p16' ? 16 : 1, sha, quick: QUICK })
      } else {
        const inst = opened.get(id)
        const ws = Array.from({ length: c }, (_, i) => inst.worker(`bench:${id}:${c}:${i}`))
        r = await runWorkers(ws, DURATION, admin)
      }
      runs[id].push(r)
      log(`${name} round ${round + 1} ${id}: ${Math.round(r.cyclesPerSec)} cycles/s`)
    }
  }
  return Object.fromEntries(entries.map((e) => [e, summarize(runs[e])]))
}

/** 16 workers on one key, retrying every `delay` ms, 1 ms critical section. */
async function contention (delay, ctx) {
  const { opened, admin } = ctx
  const n = 16
  const entries = [...opened.keys()]
  const runs = Object.fromEntries(entries.map((e) => [e, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const id of rotate(entries, round)) {
      const inst = opened.get(id)
      const key = `bench:contended:${id}:${delay}`
      const ws = Array.from({ length: n }, () => inst.contended(key, { delay, csMs: CS_MS }))
      const r = await runWorkers(ws, CONTENTION_DURATION, admin)
      runs[id].push(r)
      log(`contention delay ${delay} round ${round + 1} ${id}: ${Math.round(r.cyclesPerSec)} critical sections/s`)
    }
  }
  return Object.fromEntries(entries.map((e) => [e, summarize(runs[e])]))
}

/**
 * Counts the commands each contender's clients send per uncontended cycle,
 * with MONITOR (so commands run inside Lua scripts are not counted). Short,
 * and separate from the timed runs because MONITOR slows Redis down.
 */
async function audit (ctx) {
  const { opened, port } = ctx
  const Redis = require('ioredis')
  const mon = new Redis({ host: '127.0.0.1', port })
  const monitor = await mon.monitor()
  let counts = {}
  monitor.on('monitor', (time, args, source) => {
    if (source === 'lua') return
    const cmd = String(args[0]).toUpperCase()
    counts[cmd] = (counts[cmd] || 0) + 1
  })
  const out = {}
  for (const [id, inst] of opened) {
    // Script loading and first-use costs are not part of a steady-state cycle.
    await runWorkers([inst.worker(`bench:audit:${id}:warm`)], 50, null)
    await new Promise((resolve) => setTimeout(resolve, 100))
    counts = {}
    const ws = Array.from({ length: 16 }, (_, i) => inst.worker(`bench:audit:${id}:${i}`))
    const r = await runWorkers(ws, 300, null)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const total = Object.values(counts).reduce((a, b) => a + b, 0)
    out[id] = { perCycle: total / r.cycles, cycles: r.cycles, commands: Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / r.cycles])) }
  }
  monitor.disconnect()
  mon.disconnect()
  return out
}

/** Runs memory.js in a fresh process for one contender. */
function memory (id, port) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', path.join(__dirname, 'memory.js'), id, String(port), String(MEMORY_CYCLES), String(MEMORY_WORKERS)],
      { maxBuffer: 1 << 20, timeout: 240000 }, (err, stdout, stderr) => {
        if (err) return reject(new Error(`memory ${id}: ${err.message} ${stderr}`))
        resolve(JSON.parse(stdout.trim().split('\n').pop()))
      })
  })
}

// ---------------------------------------------------------------- output

const fmtInt = (x) => Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a'
const fmt = (x, d = 2) => Number.isFinite(x) ? x.toFixed(d) : 'n/a'
const ratio = (a, b) => Number.isFinite(a) && Number.isFinite(b) && b > 0 ? (a / b).toFixed(2) + '×' : 'n/a'
const mib = (b) => (b / 1048576).toFixed(1)

function labelOf (id) {
  if (id === 'c-limit') return 'C limit: redis-benchmark, no pipelining'
  if (id === 'c-limit-p16') return 'C limit: redis-benchmark, -P 16'
  return contenders.byId[id].label
}

function cmdBreakdown (cmds) {
  return Object.entries(cmds).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')
}

function uncontendedTable (res) {
  const floor = res['js-floor'] && res['js-floor'].cyclesPerSec
  const c1 = res['c-limit'].cyclesPerSec
  const lines = [
    '| contender | cycles/s median (min–max) | p50 ms | p99 ms | JS-thread CPU µs/cycle | process CPU µs/cycle | Redis calls/cycle (cmdstat, incl. inside Lua) | × JS floor | × C limit | × C limit -P16 |',
    '|---|---:|---:|---:|---:|---:|---|---:|---:|---:|'
  ]
  for (const [id, s] of Object.entries(res)) {
    const isC = id.startsWith('c-limit')
    const name = id === RS ? `**${labelOf(id)}**` : labelOf(id)
    lines.push(`| ${name} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${fmt(s.p50)} | ${fmt(s.p99)} | ` +
      `${isC ? 'n/a' : fmt(s.jsCpuUs, 1)} | ${isC ? 'n/a' : fmt(s.procCpuUs, 1)} | ` +
      `${isC ? '2 (SET, EVALSHA) by construction' : fmt(s.callsPerCycle) + ' (' + cmdBreakdown(s.commands) + ')'} | ` +
      `${ratio(s.cyclesPerSec, floor)} | ${ratio(s.cyclesPerSec, c1)} | ${ratio(s.cyclesPerSec, res['c-limit-p16'].cyclesPerSec)} |`)
  }
  return lines.join('\n')
}

function contentionTable (res) {
  const base = res.redislock && res.redislock.cyclesPerSec
  const floor = res['js-floor'] && res['js-floor'].cyclesPerSec
  const lines = [
    '| contender | critical sections/s median (min–max) | p50 ms | p99 ms | JS-thread CPU µs/CS | process CPU µs/CS | Redis calls/CS (cmdstat) | × redislock | × JS floor |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|'
  ]
  for (const [id, s] of Object.entries(res)) {
    const name = id === RS ? `**${labelOf(id)}**` : labelOf(id)
    lines.push(`| ${name} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${fmt(s.p50)} | ${fmt(s.p99)} | ` +
      `${fmt(s.jsCpuUs, 1)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.callsPerCycle)} | ${ratio(s.cyclesPerSec, base)} | ${ratio(s.cyclesPerSec, floor)} |`)
  }
  return lines.join('\n')
}

function memoryTable (mem) {
  const lines = [
    '| contender | cycles (16 workers) | heap MiB: warm → half → end | RSS MiB: warm → half → end | Δheap MiB | ΔRSS MiB |',
    '|---|---:|---|---|---:|---:|'
  ]
  for (const m of mem) {
    if (m.error) { lines.push(`| ${labelOf(m.id)} | failed: ${m.error} | | | | |`); continue }
    const [a, b, c] = m.points
    lines.push(`| ${m.id === RS ? '**' + labelOf(m.id) + '**' : labelOf(m.id)} | ${fmtInt(m.total)} in ${fmt(m.seconds, 1)} s | ${mib(a.heapUsed)} → ${mib(b.heapUsed)} → ${mib(c.heapUsed)} | ` +
      `${mib(a.rss)} → ${mib(b.rss)} → ${mib(c.rss)} | ${mib(c.heapUsed - a.heapUsed)} | ${mib(c.rss - a.rss)} |`)
  }
  return lines.join('\n')
}

function auditTable (aud) {
  const lines = ['| contender | client commands per uncontended cycle (MONITOR) | which |', '|---|---:|---|']
  for (const [id, a] of Object.entries(aud)) {
    lines.push(`| ${id === RS ? '**' + labelOf(id) + '**' : labelOf(id)} | ${fmt(a.perCycle)} | ${cmdBreakdown(a.commands)} |`)
  }
  return lines.join('\n')
}

/** The targets of issue 4, each as {name, pass, detail}. */
function targets (R) {
  const out = []
  const rs = (sc) => sc[RS]
  const bestJs = (sc, ids = JS_IDS) => ids.filter((id) => sc[id]).map((id) => [id, sc[id]]).sort((a, b) => b[1].cyclesPerSec - a[1].cyclesPerSec)[0]
  for (const c of [128, 512]) {
    const sc = R.parallel[c]
    if (!rs(sc)) continue
    const [bid, b] = bestJs(sc)
    const x = rs(sc).cyclesPerSec / b.cyclesPerSec
    const [lid, l] = bestJs(sc, JS_IDS.filter((i) => i !== 'js-floor'))
    out.push({ name: `Parallel C=${c}: ≥ 2× cycles/s of the best JavaScript contender`, pass: x >= 2, detail: `${x.toFixed(2)}× ${bid} (${fmtInt(rs(sc).cyclesPerSec)} vs ${fmtInt(b.cyclesPerSec)}); ${(rs(sc).cyclesPerSec / l.cyclesPerSec).toFixed(2)}× the best library (${lid})` })
  }
  {
    const sc = R.serial
    const [bid, b] = bestJs(sc)
    const bestP50 = Math.min(...JS_IDS.filter((i) => sc[i]).map((i) => sc[i].p50))
    const x = rs(sc).cyclesPerSec / b.cyclesPerSec
    out.push({ name: 'Serial: ≥ 1.0× the best JavaScript contender in cycles/s and p50', pass: x >= 1 && rs(sc).p50 <= bestP50, detail: `${x.toFixed(2)}× ${bid} in cycles/s; p50 ${fmt(rs(sc).p50, 3)} ms vs best JS ${fmt(bestP50, 3)} ms` })
  }
  {
    const sc = R.parallel[128]
    const x = rs(sc).jsCpuUs / sc['js-floor'].jsCpuUs
    out.push({ name: 'JS-thread CPU per cycle ≤ 0.5× the JS floor at C=128', pass: x <= 0.5, detail: `${fmt(rs(sc).jsCpuUs, 1)} vs ${fmt(sc['js-floor'].jsCpuUs, 1)} µs = ${x.toFixed(2)}× (whole process incl. Rust threads: ${fmt(rs(sc).procCpuUs, 1)} vs ${fmt(sc['js-floor'].procCpuUs, 1)} µs)` })
  }
  {
    const a = R.audit[RS]
    const ok = a && Math.abs(a.perCycle - 2) < 0.01 && Math.abs((a.commands.SET || 0) - 1) < 0.01 && Math.abs((a.commands.EVALSHA || 0) - 1) < 0.01
    out.push({ name: 'Exactly 2 Redis commands per uncontended cycle (SET, EVALSHA)', pass: !!ok, detail: a ? `${fmt(a.perCycle, 3)} per cycle: ${cmdBreakdown(a.commands)}` : 'not measured' })
  }
  {
    const m = R.memory.find((x) => x.id === RS)
    if (m && !m.error) {
      const dh = m.points[2].heapUsed - m.points[0].heapUsed
      const dr = m.points[2].rss - m.points[0].rss
      const dr2 = m.points[2].rss - m.points[1].rss
      const pass = dh < 1048576 && dr < 8 * 1048576 && dr2 < 2 * 1048576
      out.push({ name: 'Flat memory after warm-up (Δheap < 1 MiB, ΔRSS < 8 MiB, second half ΔRSS < 2 MiB)', pass, detail: `Δheap ${mib(dh)} MiB, ΔRSS ${mib(dr)} MiB (second half ${mib(dr2)} MiB) over ${fmtInt(m.total)} cycles` })
    } else {
      out.push({ name: 'Flat memory after warm-up', pass: false, detail: m ? m.error : 'not measured' })
    }
  }
  for (const d of DELAYS) {
    const sc = R.contention[d]
    if (!sc.redislock) continue
    const x = rs(sc).cyclesPerSec / sc.redislock.cyclesPerSec
    out.push({ name: `Contention, delay ${d} ms: no worse than redislock (≥ 0.95×, noise margin)`, pass: x >= 0.95, detail: `${x.toFixed(2)}× (${fmtInt(rs(sc).cyclesPerSec)} vs ${fmtInt(sc.redislock.cyclesPerSec)} critical sections/s)` })
  }
  return out
}

function machine () {
  const cpu = (os.cpus()[0] || {}).model || 'unknown'
  const v = (cmd, args) => { try { return execFileSync(cmd, args, { encoding: 'utf8' }).trim() } catch (_) { return 'unknown' } }
  const pkgV = (p) => { try { return require(`${p}/package.json`).version } catch (_) { return 'missing' } }
  return {
    nproc: v('nproc', []),
    cpu,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    redis: v('redis-server', ['--version']),
    git: v('git', ['-C', path.join(__dirname, '..'), 'log', '-1', '--format=%h %s']),
    dirty: v('git', ['-C', path.join(__dirname, '..'), 'status', '--short', '--', 'src', 'lib', 'index.js', 'Cargo.toml']).split('\n').filter(Boolean).length,
    addon: (() => { try { const f = fs.readdirSync(path.join(__dirname, '..')).find((x) => x.endsWith('.node')); const st = fs.statSync(path.join(__dirname, '..', f)); return `${f}, ${mib(st.size)} MiB, built ${st.mtime.toISOString()}` } catch (_) { return 'missing' } })(),
    packages: ['redislock', 'redis3', 'redlock', 'redis-semaphore', 'ioredis', 'bluebird'].map((p) => `${p}@${pkgV(p)}`).join(', ')
  }
}

function report (R, m, tgs, meta) {
  const cmd = `${QUICK ? 'BENCH_QUICK=1 ' : ''}npm run bench   # = node benchmark/index.js`
  const parts = [
    `# redislock-rs benchmark${QUICK ? ' (QUICK smoke run — not representative)' : ''}`,
    '',
    `Generated by \`${cmd}\` on ${meta.started}, total ${meta.seconds.toFixed(0)} s.`,
    '',
    `- Machine: ${m.nproc} CPUs (${m.cpu}), ${m.os}; load average at start ${meta.load0}, at end ${meta.load1}. ` +
      'The machine is shared (other jobs compile and test on it at the same time), so figures are noisy; min–max shows the spread.',
    `- Node ${m.node}; ${m.redis}`,
    `- Packages: ${m.packages}`,
    `- redislock-rs: commit ${m.git}${m.dirty ? ` (+${m.dirty} uncommitted source files in the working tree)` : ''}; addon ${m.addon}`,
    `- Method: one Redis server (started by the benchmark, \`--save '' --appendonly no\`), every contender with one connection shared by all its workers, all in one Node process, ` +
      `interleaved (start rotated each round), ${ROUNDS} rounds; each uncontended measurement runs ${DURATION} ms (after a ${WARMUP} ms warm-up per scenario), ` +
      `contention ones ${CONTENTION_DURATION} ms. A cycle = acquire + release (TTL 10 s). Latency is per cycle. ` +
      'JS-thread CPU = CPU time of the main (JavaScript) thread from /proc/self/task/<pid>/schedstat; process CPU = process.cpuUsage() user+system (includes redislock-rs\'s Rust threads). ' +
      'Redis calls/cycle = INFO commandstats delta / cycles, which also counts the GET/DEL run inside the release script; the client-sent count is in the MONITOR audit table.',
    '- C limit: `redis-benchmark` (one connection per client, unlike the contenders) running `SET lock:__rand_int__ token PX 10000 NX` and `EVALSHA <compare-and-delete> 1 lock:__rand_int__ token` at the same -c, with -r 1000000; ' +
      'cycles/s = 1/(1/rps_SET + 1/rps_EVALSHA), latencies = sum of the two commands\' percentiles. Example: `' + (R.serial['c-limit'].command || '') + '`.',
    '- redlock: retryJitter 0; redis-semaphore: refreshInterval 0 (no auto-refresh timer, as redislock), acquireAttemptsLimit 1 when uncontended.',
    '',
    '## Targets',
    '',
    ...tgs.map((t) => `- **${t.pass ? 'PASS' : 'MISS'}** ${t.name}: ${t.detail}`),
    '',
    '## 1. Serial: one worker, one key',
    '',
    uncontendedTable(R.serial),
    ''
  ]
  for (const c of PARALLEL) {
    parts.push(`## 2. Parallel: ${c} workers on distinct keys`, '', uncontendedTable(R.parallel[c]), '')
  }
  for (const d of DELAYS) {
    parts.push(`## 3. Contention: 16 workers on one key, retry delay ${d} ms, ${CS_MS} ms critical section`, '', contentionTable(R.contention[d]), '')
  }
  parts.push('## Commands per uncontended cycle (MONITOR, 16 workers, after warm-up)', '', auditTable(R.audit), '')
  parts.push(`## 4. Memory: ${fmtInt(MEMORY_CYCLES)} acquire+release cycles per contender, each in a fresh \`node --expose-gc\` process, GC forced before each reading`, '', memoryTable(R.memory), '')
  return parts.join('\n')
}

// ---------------------------------------------------------------- main

async function main () {
  const t0 = Date.now()
  const meta = { started: new Date().toISOString(), load0: os.loadavg().map((x) => x.toFixed(2)).join(' ') }
  const server = await startRedis()
  log(`redis-server pid ${server.pid} on port ${server.port}${QUICK ? ' (QUICK mode)' : ''}`)
  const opened = new Map()
  let admin
  try {
    admin = await contenders.ioredisClient(server.port)
    const sha = await admin.script('LOAD', contenders.DEL_IF_EQUAL)
    for (const c of list) opened.set(c.id, await c.open(server.port))
    const ctx = { opened, admin, port: server.port, sha }
    const R = { parallel: {}, contention: {} }
    R.serial = await uncontended('serial', 1, ctx)
    for (const c of PARALLEL) R.parallel[c] = await uncontended(`parallel C=${c}`, c, ctx)
    for (const d of DELAYS) R.contention[d] = await contention(d, ctx)
    log('command audit (MONITOR)')
    R.audit = await audit(ctx)
    R.memory = []
    if (process.env.BENCH_NO_MEMORY !== '1') {
      const ids = QUICK ? [RS] : [RS, ...list.map((c) => c.id).filter((id) => id !== RS)]
      for (const id of ids) {
        log(`memory: ${id}`)
        try { R.memory.push(await memory(id, server.port)) } catch (err) { R.memory.push({ id, error: err.message.split('\n')[0] }) }
      }
    }
    meta.seconds = (Date.now() - t0) / 1000
    meta.load1 = os.loadavg().map((x) => x.toFixed(2)).join(' ')
    const tgs = targets(R)
    const text = report(R, machine(), tgs, meta)
    const file = path.join(__dirname, QUICK ? 'RESULTS.quick.md' : 'RESULTS.md')
    fs.writeFileSync(file, text + '\n')
    fs.writeFileSync(file.replace(/\.md$/, '.json'), JSON.stringify({ meta, R }, null, 1) + '\n')
    console.log(text)
    console.log('')
    for (const t of tgs) console.log(`${t.pass ? 'PASS' : 'MISS'}  ${t.name} — ${t.detail}`)
    log(`wrote ${path.relative(process.cwd(), file)} in ${meta.seconds.toFixed(0)} s`)
  } finally {
    for (const inst of opened.values()) await inst.close().catch(() => {})
    if (admin) await contenders.closeIoredis(admin)
    await server.stop()
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err)
  process.exit(1)
})
