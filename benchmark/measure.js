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

/** Latencies (ms) as a plain array for JSON, 0.1 µs resolution. */
const forJson = (sorted) => Array.from(sorted, (x) => Math.round(x * 1e4) / 1e4)

/**
 * Handoffs under contention: `waiters` (objects with acquire(), which waits
 * as long as it takes, and release()) all on ONE lock, each in a loop:
 * acquire, count, release (no await in between: a ~0 ms hold). For every
 * acquisition, the handoff = from the start of the previous holder's
 * release() call to this acquire() resolving (both timestamps taken with
 * process.hrtime.bigint() in this process); also the time each acquire()
 * waited, and the handoffs that went to another worker than the previous
 * holder on their own (a lock its releaser takes straight back hands
 * nothing off). Runs `warmupMs` unrecorded, then records until `durationMs` have
 * passed and at least `minHandoffs` were seen, or `capMs` at the latest.
 * The workers still waiting at the end are abandoned (the caller exits),
 * not drained: workers leaving one by one is not contention. A gap still
 * open at the end (released, nobody has it yet) is reported as openGapMs.
 * Sanity check: `overlaps` counts acquisitions (warm-up included) that
 * resolved while another worker of this process still held the lock (its
 * release() not yet called); anything but 0 means the lock is not exclusive.
 */
async function runHandoffs (waiters, { warmupMs, durationMs, minHandoffs, capMs, stayOut = true, holdMs = 1 }) {
  const gaps = new Samples()
  const otherGaps = new Samples() // to another worker than the previous holder
  const waits = new Samples()
  let recording = false
  let finished = false
  let timeUp = false
  let capped = false
  let lastRelease = null
  let lastHolder = -1
  let holding = -1 // the worker holding the lock now (release() not yet called), or -1
  let overlaps = 0
  let same = 0
  let counter = 0
  let closed = false // finished by an acquisition: no handoff in progress
  let resolveDone
  const done = new Promise((resolve) => { resolveDone = resolve })
  // "The holder unlocks and stays out": after its release a worker waits
  // until another worker has the lock (held `holdMs`) before it asks again. A gap is
  // recorded only when the new holder was already waiting when the release
  // started; an acquire that began after it (a late arrival, which wins by
  // its immediate first attempt) is counted apart.
  let acquiredBy = []
  const untilOtherHolds = (i) => new Promise((resolve) => acquiredBy.push({ i, resolve }))
  const finish = () => { if (!finished) { finished = true; resolveDone() } }
  async function loop (i) {
    const w = waiters[i]
    while (!finished) {
      const s = hr()
      const ok = await w.acquire()
      const t = hr()
      if (finished) return
      if (ok !== true) throw new Error(`waiter ${i}: acquire() resolved ${ok} while waiting forever`)
      if (holding !== -1) overlaps++
      holding = i
      if (acquiredBy.length) {
        const sittingOut = acquiredBy
        acquiredBy = []
        for (const w of sittingOut) {
          if (w.i === i) acquiredBy.push(w)
          else w.resolve()
        }
      }
      counter++ // the critical section
      if (recording) {
        waits.push(Number(t - s) / 1e6)
        if (lastRelease !== null) {
          const gap = Number(t - lastRelease) / 1e6
          if (s > lastRelease) {
            // A late arrival: its acquire() started after the release, so
            // it handed nothing over to a waiter. Not a handoff; counted.
            same++
          } else {
            gaps.push(gap)
            if (lastHolder !== i) otherGaps.push(gap)
          }
        }
        if (timeUp && gaps.n >= minHandoffs) { closed = true; finish(); return }
      }
      // A short critical section: a worker coming back from sitting out
      // (at this acquisition) then finds the lock held and waits its turn
      // like everyone else, instead of winning the free moment after the
      // release with its immediate first attempt.
      if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs))
      if (finished) return
      lastHolder = i
      holding = -1
      lastRelease = hr()
      await w.release()
      if (stayOut && !finished) await Promise.race([untilOtherHolds(i), done])
    }
  }
  const all = Promise.all(waiters.map((_, i) => loop(i)))
  all.catch(() => {})
  await Promise.race([new Promise((resolve) => setTimeout(resolve, warmupMs)), all])
  recording = true
  const cpu0 = process.cpuUsage()
  const js0 = jsThreadCpuNs()
  const t0 = hr()
  const timers = [
    setTimeout(() => { timeUp = true; if (gaps.n >= minHandoffs) finish() }, durationMs),
    setTimeout(() => { capped = true; finish() }, capMs)
  ]
  try {
    await Promise.race([done, all])
  } finally {
    finished = true
    for (const t of timers) clearTimeout(t)
  }
  const tEnd = hr()
  const js1 = jsThreadCpuNs()
  const cpu = process.cpuUsage(cpu0)
  const n = gaps.n
  const seconds = Number(tEnd - t0) / 1e9
  return {
    handoffs: n,
    seconds,
    handoffsPerSec: n / seconds,
    sameWorker: same,
    capped,
    openGapMs: !closed && lastRelease !== null ? Number(tEnd - lastRelease) / 1e6 : NaN,
    procCpuUs: (cpu.user + cpu.system) / n,
    jsCpuUs: (js1 - js0) / 1e3 / n,
    acquisitions: counter,
    overlaps,
    gaps: forJson(gaps.sorted()),
    otherGaps: forJson(otherGaps.sorted()),
    waits: forJson(waits.sorted())
  }
}

/** Combines handoff runs: percentiles over all rounds' handoffs pooled, medians of the rest. */
function summarizeHandoffs (runs, stallMs) {
  const gaps = runs.flatMap((r) => r.gaps).sort((a, b) => a - b)
  const waits = runs.flatMap((r) => r.waits).sort((a, b) => a - b)
  const others = runs.flatMap((r) => r.otherGaps || []).sort((a, b) => a - b)
  const open = runs.map((r) => r.openGapMs).filter((x) => Number.isFinite(x))
  const openMax = open.length ? Math.max(...open) : NaN
  const rate = runs.map((r) => r.handoffsPerSec)
  return {
    runs: runs.length,
    handoffs: gaps.length,
    seconds: runs.reduce((a, r) => a + r.seconds, 0),
    handoffsPerSec: median(rate),
    min: Math.min(...rate),
    max: Math.max(...rate),
    p50: percentile(gaps, 0.5),
    p99: percentile(gaps, 0.99),
    maxGap: gaps.length ? gaps[gaps.length - 1] : NaN,
    stalls: gaps.filter((g) => g > stallMs).length,
    // a gap still open when a round ended, counted as a stall if long enough
    openStalls: open.filter((g) => g > stallMs).length,
    openGapMaxMs: openMax,
    // share of acquisitions by late arrivals (not handoffs, not in the gaps)
    sameWorker: runs.reduce((a, r) => a + r.sameWorker, 0) / Math.max(1, gaps.length + runs.reduce((a, r) => a + r.sameWorker, 0)),
    // handoffs to another worker than the previous holder only
    otherHandoffs: others.length,
    otherP50: percentile(others, 0.5),
    otherP99: percentile(others, 0.99),
    waitP50: percentile(waits, 0.5),
    waitP99: percentile(waits, 0.99),
    waitMax: waits.length ? waits[waits.length - 1] : NaN,
    capped: runs.filter((r) => r.capped).length,
    overlaps: runs.reduce((a, r) => a + (r.overlaps || 0), 0),
    procCpuUs: median(runs.map((r) => r.procCpuUs)),
    jsCpuUs: median(runs.map((r) => r.jsCpuUs).filter((x) => Number.isFinite(x)))
  }
}

module.exports = { runWorkers, runHandoffs, summarize, summarizeHandoffs, median, percentile, statsDelta, jsThreadCpuNs, threadNames }
