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

/**
 * Runs named groups of workers (`groups`: {name: [worker, ...]}) together
 * for `durationMs`, each worker looping cycle(). Per group: the cycles
 * completed within `durationMs` (a cycle still running then is not counted,
 * so a worker that never got in counts 0, not the one cycle it finishes
 * once the others stop), cycles/s over `durationMs`, latency p50 / p99 /
 * max of those cycles, and the longest a cycle had been running at the
 * deadline (`openMaxMs`: a starving worker shows here). Process and
 * JS-thread CPU are over the whole interval, per cycle of every group. The
 * measurement ends when every worker has finished its last cycle (`tailMs`:
 * how long after the deadline).
 */
async function runGroups (groups, durationMs, stats) {
  const before = stats ? await stats() : null
  const names = Object.keys(groups)
  const per = Object.fromEntries(names.map((n) => [n, { lat: new Samples(), cycles: 0, running: new Set() }]))
  let stop = false
  const cpu0 = process.cpuUsage()
  const js0 = jsThreadCpuNs()
  const t0 = hr()
  let tStop = null
  const openAtStop = {}
  const timer = setTimeout(() => {
    stop = true
    tStop = hr()
    for (const n of names) openAtStop[n] = Math.max(0, ...[...per[n].running].map((m) => Number(tStop - m.s) / 1e6))
  }, durationMs)
  async function loop (g, w) {
    while (!stop) {
      const s = hr()
      const mark = { s } // not `s` itself: two cycles may start in the same ns
      g.running.add(mark)
      await w.cycle()
      g.running.delete(mark)
      if (stop) return
      g.lat.push(Number(hr() - s) / 1e6)
      g.cycles++
    }
  }
  try {
    await Promise.all(names.flatMap((n) => groups[n].map((w) => loop(per[n], w))))
  } finally {
    clearTimeout(timer)
    stop = true
  }
  const tEnd = hr()
  const js1 = jsThreadCpuNs()
  const cpu = process.cpuUsage(cpu0)
  const delta = stats ? statsDelta(before, await stats()) : {}
  const seconds = tStop ? Number(tStop - t0) / 1e9 : Number(tEnd - t0) / 1e9
  const total = names.reduce((a, n) => a + per[n].cycles, 0)
  const calls = Object.values(delta).reduce((a, b) => a + b, 0)
  const out = {
    seconds,
    tailMs: tStop ? Number(tEnd - tStop) / 1e6 : 0,
    cycles: total,
    jsCpuUs: (js1 - js0) / 1e3 / total,
    procCpuUs: (cpu.user + cpu.system) / total,
    callsPerCycle: stats ? calls / total : NaN,
    commands: Object.fromEntries(Object.entries(delta).map(([k, v]) => [k, v / total])),
    groups: {}
  }
  for (const n of names) {
    const sorted = per[n].lat.sorted()
    out.groups[n] = {
      workers: groups[n].length,
      cycles: per[n].cycles,
      cyclesPerSec: per[n].cycles / seconds,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      maxMs: sorted.length ? sorted[sorted.length - 1] : NaN,
      openMaxMs: openAtStop[n] || 0
    }
  }
  return out
}

/** Combines runGroups runs: per group the medians of cycles/s, p50, p99 (min–max of cycles/s), the largest max and open wait; medians of the rest. */
function summarizeGroups (runs) {
  const med = (xs) => { const f = xs.filter((x) => Number.isFinite(x)); return f.length ? median(f) : NaN }
  const out = { runs: runs.length, procCpuUs: med(runs.map((r) => r.procCpuUs)), jsCpuUs: med(runs.map((r) => r.jsCpuUs)), callsPerCycle: med(runs.map((r) => r.callsPerCycle)), tailMsMax: Math.max(...runs.map((r) => r.tailMs)), groups: {} }
  const cmds = {}
  for (const r of runs) for (const [k, v] of Object.entries(r.commands || {})) (cmds[k] = cmds[k] || []).push(v)
  out.commands = Object.fromEntries(Object.entries(cmds).map(([k, v]) => [k, median(v)]))
  const names = runs.length ? Object.keys(runs[0].groups) : []
  for (const n of names) {
    const gs = runs.map((r) => r.groups[n])
    const cps = gs.map((g) => g.cyclesPerSec)
    out.groups[n] = {
      workers: gs[0].workers,
      cyclesPerSec: med(cps),
      min: Math.min(...cps),
      max: Math.max(...cps),
      cycles: gs.reduce((a, g) => a + g.cycles, 0),
      p50: med(gs.map((g) => g.p50)),
      p99: med(gs.map((g) => g.p99)),
      maxMs: Math.max(...gs.map((g) => g.maxMs).filter((x) => Number.isFinite(x)), 0),
      openMaxMs: Math.max(...gs.map((g) => g.openMaxMs))
    }
  }
  for (const f of ['engine']) if (runs[0] && runs[0][f] !== undefined) out[f] = runs[0][f]
  return out
}

function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

/** Combines repeated measurements: medians of every field (serverCpuUs where measured), min–max of cycles/s. */
function summarize (runs) {
  const pick = (f) => runs.map((r) => r[f]).filter((x) => Number.isFinite(x))
  const out = { runs: runs.length }
  const fields = ['cyclesPerSec', 'p50', 'p99', 'jsCpuUs', 'procCpuUs', 'callsPerCycle']
  if (runs.some((r) => r.serverCpuUs !== undefined)) fields.push('serverCpuUs')
  for (const f of fields) {
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
 * `csPerSec`: the acquisitions while recording (handoffs and late
 * arrivals: the critical sections) per second.
 * Sanity check: `overlaps` counts acquisitions (warm-up included) that
 * resolved while another worker of this process still held the lock (its
 * release() not yet called); anything but 0 means the lock is not exclusive.
 */
async function runHandoffs (waiters, { warmupMs, durationMs, minHandoffs, capMs, stayOut = true, holdMs = 1, order = false }) {
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
  let held = 0 // acquisitions while recording: critical sections, late arrivals included
  let closed = false // finished by an acquisition: no handoff in progress
  // order: when each worker's pending acquire() started (hrtime), to check
  // first come, first served: a grant is "in order" when it went to the
  // worker whose acquire() started first among those waiting.
  const since = order ? new Map() : null
  let inOrder = 0
  let ordered = 0
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
      if (since) since.set(i, s)
      const ok = await w.acquire()
      const t = hr()
      if (finished) return
      if (since) {
        since.delete(i)
        if (recording) {
          // Waiting longer than this one (its acquire started earlier) and still waiting?
          let first = true
          for (const other of since.values()) if (other < s) { first = false; break }
          ordered++
          if (first) inOrder++
        }
      }
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
      if (recording) held++
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
    csPerSec: held / seconds,
    overlaps,
    ...(order ? { ordered, inOrder } : {}),
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
    // critical sections (acquisitions while recording, late arrivals too) per s, median of the rounds
    csPerSec: median(runs.map((r) => r.csPerSec).filter((x) => Number.isFinite(x))),
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
    // order: grants to the longest-waiting waiter / grants, over all rounds
    ...(runs.some((r) => r.ordered !== undefined) ? {
      ordered: runs.reduce((a, r) => a + (r.ordered || 0), 0),
      inOrder: runs.reduce((a, r) => a + (r.inOrder || 0), 0)
    } : {}),
    procCpuUs: median(runs.map((r) => r.procCpuUs)),
    jsCpuUs: median(runs.map((r) => r.jsCpuUs).filter((x) => Number.isFinite(x)))
  }
}

module.exports = { runWorkers, runGroups, runHandoffs, summarize, summarizeGroups, summarizeHandoffs, median, percentile, statsDelta, jsThreadCpuNs, threadNames }
