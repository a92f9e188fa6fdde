'use strict'

/**
 * Measuring helpers: run workers for a while and collect cycles/s, latency
 * percentiles, CPU (JavaScript main thread and whole process) and Redis
 * command counts for the measured interval; combine repeated measurements.
 */

const fs = require('fs')

const hr = () => process.hrtime.bigint()

/** CPU time (ns) of this process's main thread, the one that runs JavaScript. */
const mainThreadStat = `/proc/${process.pid}/task/${process.pid}/schedstat`
function jsThreadCpuNs () {
  try {
    return Number(fs.readFileSync(mainThreadStat, 'utf8').split(' ')[0])
  } catch (_) {
    return NaN
  }
}

/** The names of this process's threads (Linux), e.g. ['node', 'libuv-worker', ...]. */
function threadNames () {
  try {
    return fs.readdirSync('/proc/self/task')
      .map((t) => { try { return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() } catch (_) { return '' } })
  } catch (_) {
    return null
  }
}

function statsDelta (before, after) {
  const out = {}
  for (const k of Object.keys(after)) {
    const d = after[k] - (before[k] || 0)
    if (d > 0) out[k] = d
  }
  return out
}

function percentile (sorted, p) {
  if (sorted.length === 0) return NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))
  return sorted[i]
}

/** A growable Float64Array of latencies (ms). */
class Samples {
  constructor () { this.a = new Float64Array(1 << 16); this.n = 0 }
  push (x) {
    if (this.n === this.a.length) {
      const b = new Float64Array(this.a.length * 2)
      b.set(this.a)
      this.a = b
    }
    this.a[this.n++] = x
  }

  sorted () { return this.a.slice(0, this.n).sort() }
}

/**
 * Runs `workers` (objects with cycle()) concurrently for `durationMs`; each
 * worker starts a new cycle until the time is up, and the measurement ends
 * when every worker has finished its last cycle. `stats` (optional) is an
 * async function returning the server's {command: calls}.
 */
async function runWorkers (workers, durationMs, stats) {
  const lat = new Samples()
  const before = stats ? await stats() : null
  let stop = false
  let cycles = 0
  const cpu0 = process.cpuUsage()
  const js0 = jsThreadCpuNs()
  const t0 = hr()
  const timer = setTimeout(() => { stop = true }, durationMs)
  async function loop (w) {
    while (!stop) {
      const s = hr()
      await w.cycle()
      lat.push(Number(hr() - s) / 1e6)
      cycles++
    }
  }
  try {
    await Promise.all(workers.map(loop))
  } finally {
    clearTimeout(timer)
    stop = true
  }
  const elapsedNs = Number(hr() - t0)
  const js1 = jsThreadCpuNs()
  const cpu = process.cpuUsage(cpu0)
  const delta = stats ? statsDelta(before, await stats()) : {}
  const sorted = lat.sorted()
  const calls = Object.values(delta).reduce((a, b) => a + b, 0)
  return {
    cycles,
    seconds: elapsedNs / 1e9,
    cyclesPerSec: cycles / (elapsedNs / 1e9),
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    jsCpuUs: (js1 - js0) / 1e3 / cycles,
    procCpuUs: (cpu.user + cpu.system) / cycles,
    callsPerCycle: stats ? calls / cycles : NaN,
    commands: Object.fromEntries(Object.entries(delta).map(([k, v]) => [k, v / cycles]))
  }
}

function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

/** Combines repeated measurements: medians of every field, min–max of cycles/s. */
function summarize (runs) {
  const pick = (f) => runs.map((r) => r[f]).filter((x) => Number.isFinite(x))
  const out = { runs: runs.length }
  for (const f of ['cyclesPerSec', 'p50', 'p99', 'jsCpuUs', 'procCpuUs', 'callsPerCycle']) {
    const xs = pick(f)
    out[f] = xs.length ? median(xs) : NaN
  }
  const c = pick('cyclesPerSec')
  out.min = Math.min(...c)
  out.max = Math.max(...c)
  const cmds = {}
  for (const r of runs) for (const [k, v] of Object.entries(r.commands || {})) (cmds[k] = cmds[k] || []).push(v)
  out.commands = Object.fromEntries(Object.entries(cmds).map(([k, v]) => [k, median(v)]))
  for (const f of ['command', 'engine']) if (runs[0] && runs[0][f] !== undefined) out[f] = runs[0][f]
  return out
}

module.exports = { runWorkers, summarize, median, statsDelta, jsThreadCpuNs, threadNames }
