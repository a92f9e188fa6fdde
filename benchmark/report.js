'use strict'

/**
 * Renders the results of a run (index.js) as the markdown report, with the
 * targets of issue 9 and each face's checks judged by judge.js
 * (PASS / MISS, from ratios within the same run),
 * with the Redisson face's own PASS / MISS rows (redislock-rs/redisson vs
 * node-redisson; not among issue 9's targets) and the wake-on-release
 * section's (redislock-rs with wakeOnRelease vs polling; not among them
 * either), and the quorum section's (redislock-rs Redlock vs node-redlock on
 * 3 servers; not among them either), the node-redlock face's (redislock-rs/redlock
 * vs redlock 4.2.0 on 1 and 3 servers: issue 20's targets), the redis-semaphore face's
 * (redislock-rs/semaphore vs redis-semaphore 5.8.0, Mutex and Semaphore, on
 * one server; judged on the JS-thread engine), the redisson-sync section's
 * tables (Java Redisson's synchronizers on the Redisson face, issue 23;
 * informational: same-run ratios, no PASS / MISS), the cluster section's tables
 * (redislock-rs vs node-redlock and redislock on a Redis Cluster; ratios
 * only, no PASS / MISS), and the valkey section's (redislock-rs on Valkey 9,
 * Lua-free vs scripted vs the JavaScript contenders, with the server's CPU
 * per cycle; issue 35's PASS / MISS rows, or why it was skipped), and the
 * web-locks section's tables (the Web Locks face, redislock-rs/web-locks,
 * next to the redislock face in the same run: uncontended, the handoff of
 * one name, a shared / exclusive mix; informational: same-run ratios, no
 * PASS / MISS).
 */

const fs = require('fs')
const os = require('os')
const path = require('path')
const { execFileSync } = require('child_process')
const judge = require('./judge')

const {
  RS, RS_TOKIO, FLOOR, C_LIMIT, REDISSON_RS, NODE_REDISSON, RS_WAKE, RS_QUORUM, REDLOCK_QUORUM,
  RS_CLUSTER, RS_REDLOCK, REDLOCK_FACE_TARGETS, SEMAPHORE_FACE_KINDS, semPeer, SEMAPHORE_FACE_RS,
  SEMAPHORE_FACE_TARGETS, SYNC_RS, SYNC_RW, SYNC_RW_EXCLUSIVE, SYNC_LOCK, SYNC_FAIR,
  SYNC_LOCK_HANDOFF, SYNC_SEMAPHORE, SYNC_SEM_PEER, SYNC_SEM_FACE, SYNC_PES, CLUSTER_PEERS, JS_IDS,
  THROUGHPUT, fmtInt, fmt, times, ratio, mib, workersLabel, labelOf, nameOf, bestJs, cmdBreakdown,
  ratioTargets, targets, otherChecks, redissonChecks, wakeChecks, quorumChecks, serversLabel,
  redlockFaceChecks, redlockFaceContention, semaphoreFaceChecks, semaphoreFaceContention,
  semaphoreFaceReadmeRows, RS_VALKEY_SCRIPTED, VALKEY_RS, VALKEY_CPU_TARGETS, VALKEY_THROUGHPUT_TARGETS, valkeyChecks,
  WEB_LOCKS_EXCLUSIVE, WEB_LOCKS_SHARED, WEB_LOCKS_RS
} = judge

// ---------------------------------------------------------------- tables

function summaryTable (R) {
  const lines = [
    '| scenario | redislock-rs JS-thread engine | tokio engine | best JS contender | JS floor | JS-thread engine × best JS (target) | tokio × best JS | JS-thread engine × C limit |',
    '|---|---:|---:|---|---:|---:|---:|---:|'
  ]
  const add = (where, unc) => {
    for (const [c, sc] of Object.entries(unc)) {
      const [bid, b] = bestJs(sc)
      const cps = (id) => sc[id] ? fmtInt(sc[id].cyclesPerSec) : 'n/a'
      const r = (id, base) => sc[id] && base ? times(ratio(sc[id].cyclesPerSec, base.cyclesPerSec)) : 'n/a'
      lines.push(`| ${where}${workersLabel(c)} | ${cps(RS)} | ${cps(RS_TOKIO)} | ${b ? `${fmtInt(b.cyclesPerSec)} (${bid})` : 'n/a'} | ${cps(FLOOR)} | ` +
        `${r(RS, b)} (≥ ${THROUGHPUT[c]}×) | ${r(RS_TOKIO, b)} | ${r(RS, sc[C_LIMIT])} |`)
    }
  }
  add('', R.local.uncontended)
  if (R.remote && R.remote.uncontended) add('remote, ', R.remote.uncontended)
  return lines.join('\n')
}

function uncontendedTable (sc) {
  const [, best] = bestJs(sc)
  const floor = sc[FLOOR]
  const climit = sc[C_LIMIT]
  const lines = [
    '| contender | cycles/s median (min–max) | × best JS | × JS floor | × C limit | p50 ms | p99 ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    const isC = id === C_LIMIT
    const r = (base) => base ? times(ratio(s.cyclesPerSec, base.cyclesPerSec)) : 'n/a'
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${r(best)} | ${r(floor)} | ${r(climit)} | ` +
      `${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ${isC ? 'n/a' : fmt(s.procCpuUs, 1)} | ${isC ? 'n/a' : fmt(s.jsCpuUs, 1)} | ` +
      `${isC ? '2 (SET, EVALSHA), by construction' : `${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)})`} |`)
  }
  return lines.join('\n')
}

function contentionTable (sc) {
  const base = sc.redislock
  const floor = sc[FLOOR]
  const lines = [
    '| contender | critical sections/s median (min–max) | × redislock | × JS floor | p50 ms | p99 ms | process CPU µs/CS | JS-thread CPU µs/CS | Redis cmds/CS (cmdstat) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    const r = (b) => b ? times(ratio(s.cyclesPerSec, b.cyclesPerSec)) : 'n/a'
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${r(base)} | ${r(floor)} | ` +
      `${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)} | ${fmt(s.callsPerCycle)} |`)
  }
  return lines.join('\n')
}

function auditTable (aud) {
  const lines = [
    '| contender | commands sent per uncontended cycle (MONITOR) | which | engine | threads named redislock-rs* after the last release |',
    '|---|---:|---|---|---|'
  ]
  for (const [id, a] of Object.entries(aud)) {
    lines.push(`| ${nameOf(id)} | ${fmt(a.sentPerCycle)} | ${cmdBreakdown(a.sent)} | ${a.engine || '—'} | ` +
      `${a.ourThreads ? a.ourThreads.join(', ') || 'none' : 'n/a'} (of ${a.threads} threads) |`)
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
    lines.push(`| ${nameOf(m.id)} | ${fmtInt(m.total)} in ${fmt(m.seconds, 1)} s | ${mib(a.heapUsed)} → ${mib(b.heapUsed)} → ${mib(c.heapUsed)} | ` +
      `${mib(a.rss)} → ${mib(b.rss)} → ${mib(c.rss)} | ${mib(c.heapUsed - a.heapUsed)} | ${mib(c.rss - a.rss)} |`)
  }
  return lines.join('\n')
}

/** The node-redlock face under contention: critical sections/s and × redlock. */
function redlockFaceContentionTable (sc) {
  const base = sc[REDLOCK_QUORUM]
  const lines = [
    '| contender | critical sections/s median (min–max) | × redlock | p50 ms | p99 ms | process CPU µs/CS | JS-thread CPU µs/CS | Redis cmds/CS, all servers (cmdstat) |',
    '|---|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${base ? times(ratio(s.cyclesPerSec, base.cyclesPerSec)) : 'n/a'} | ` +
      `${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

function redissonUncontendedTable (sc) {
  const base = sc[NODE_REDISSON]
  const lines = [
    '| contender | cycles/s median (min–max) | × node-redisson | p50 ms | p99 ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${base ? times(ratio(s.cyclesPerSec, base.cyclesPerSec)) : 'n/a'} | ` +
      `${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

function quorumTable (sc) {
  const base = sc[REDLOCK_QUORUM]
  const lines = [
    '| contender | cycles/s median (min–max) | × redlock | p50 ms | p99 ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle, all servers (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${base ? times(ratio(s.cyclesPerSec, base.cyclesPerSec)) : 'n/a'} | ` +
      `${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/** The redis-semaphore face, one kind, uncontended: cycles/s, × redis-semaphore (`peer`), CPU and Redis commands per cycle. */
function semaphoreFaceTable (sc, peer) {
  const base = sc[peer]
  const lines = [
    '| contender | cycles/s median (min–max) | × redis-semaphore | p50 ms | p99 ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${base ? times(ratio(s.cyclesPerSec, base.cyclesPerSec)) : 'n/a'} | ` +
      `${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/** The redis-semaphore face's Mutex under contention: critical sections/s and × redis-semaphore. */
function semaphoreFaceContentionTable (sc) {
  const base = sc[semPeer('mutex')]
  const lines = [
    '| contender | critical sections/s median (min–max) | × redis-semaphore | p50 ms | p99 ms | process CPU µs/CS | JS-thread CPU µs/CS | Redis cmds/CS (cmdstat) |',
    '|---|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${base ? times(ratio(s.cyclesPerSec, base.cyclesPerSec)) : 'n/a'} | ` +
      `${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/** The cluster section's rows: cycles/s and this row's ratio to each peer measured (CLUSTER_PEERS). */
function clusterTable (sc) {
  const peers = CLUSTER_PEERS.filter(([id]) => sc[id])
  const lines = [
    `| contender | cycles/s median (min–max) | ${peers.map(([, short]) => `× ${short} | `).join('')}p50 ms | p99 ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle, all primaries (cmdstat, incl. inside Lua) |`,
    `|---|---:|${peers.map(() => '---:|').join('')}---:|---:|---:|---:|---|`
  ]
  for (const [id, s] of Object.entries(sc)) {
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${peers.map(([pid]) => `${times(ratio(s.cyclesPerSec, sc[pid].cyclesPerSec))} | `).join('')}` +
      `${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/** The valkey section, one worker count: cycles/s, × scripted (ours, REDISLOCK_RS_LUA_FREE=0), × best JS, latency, the server's and the client's CPU per cycle, Redis commands. */
function valkeyTable (sc) {
  const scripted = sc[RS_VALKEY_SCRIPTED]
  const [, best] = bestJs(sc)
  const lines = [
    '| contender | cycles/s median (min–max) | × scripted | × best JS | p50 ms | p99 ms | server CPU µs/cycle (INFO cpu) | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    const r = (b) => b ? times(ratio(s.cyclesPerSec, b.cyclesPerSec)) : 'n/a'
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${r(scripted)} | ${r(best)} | ${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ` +
      `${fmt(s.serverCpuUs, 2)} | ${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/**
 * Redis Cluster: one line per worker count, redislock-rs's cycles/s and its
 * ratio to each peer in the same run (informational: no target).
 */
function clusterRatios (Rc) {
  return Object.entries(Rc.uncontended).map(([c, sc]) => {
    const a = sc[RS_CLUSTER]
    if (!a) return `${workersLabel(c)}: redislock-rs not measured`
    const peers = CLUSTER_PEERS.filter(([id]) => sc[id])
      .map(([id, short]) => `${times(ratio(a.cyclesPerSec, sc[id].cyclesPerSec))} ${short} (${fmtInt(sc[id].cyclesPerSec)})`)
    return `${workersLabel(c)}: redislock-rs ${fmtInt(a.cyclesPerSec)} cycles/s (p50 ${fmt(a.p50, 3)} ms)${peers.length ? ` = ${peers.join(', ')}` : ''}`
  })
}

/** The README's "Beyond redislock" rows for the cluster section: one per peer. */
function clusterReadmeRows (Rc) {
  const ws = Object.keys(Rc.uncontended)
  const n = Rc.primaries.length
  const col = (id) => ws.map((c) => Rc.uncontended[c][id] ? fmtInt(Rc.uncontended[c][id].cyclesPerSec) : 'n/a').join(' / ')
  const peerName = { 'redlock-cluster': `node-redlock ${pkgVersion('redlock')}`, 'redislock-cluster': `redislock ${pkgVersion('redislock')}` }
  return CLUSTER_PEERS.filter(([id]) => ws.some((c) => Rc.uncontended[c][id])).map(([id]) => {
    const r = ws.map((c) => { const sc = Rc.uncontended[c]; return sc[RS_CLUSTER] && sc[id] ? times(ratio(sc[RS_CLUSTER].cyclesPerSec, sc[id].cyclesPerSec)) : 'n/a' }).join(' / ')
    return `| Redis Cluster (${n} primaries), ${ws.join(' / ')} workers (cycles/s) | ${col(RS_CLUSTER)} | ${peerName[id]} (ioredis Cluster): ${col(id)} | ${r} |`
  })
}

/**
 * Handoff rows; `wait`: what the waiting call is called; `other`: add the
 * handoffs to another worker than the previous holder (wake section);
 * `order`: add the grants to the longest waiter; `cs`: add the critical
 * sections per second (handoffs and late arrivals; web-locks section).
 */
function handoffTable (sc, stallMs, { wait = 'tryLock', other = false, order = false, cs = false } = {}) {
  const lines = [
    `| contender | handoffs (rounds, s recorded) | handoffs/s median (min–max) | ${cs ? 'critical sections/s median | ' : ''}handoff p50 ms | p99 ms | max ms | stalls > ${stallMs} ms | late arrivals (not counted) | ` +
      `${other ? 'to another worker: handoffs, p50 / p99 ms | ' : ''}${order ? 'grants to the longest waiter | ' : ''}wait in ${wait} p50 / p99 / max ms | process CPU µs/handoff |`,
    `|---|---:|---:|${cs ? '---:|' : ''}---:|---:|---:|---:|---:|${other ? '---:|' : ''}${order ? '---:|' : ''}---:|---:|`
  ]
  for (const [id, s] of Object.entries(sc)) {
    const open = Number.isFinite(s.openGapMaxMs) && s.openGapMaxMs > s.maxGap ? ` (a gap still open at the end of a round: ≥ ${fmt(s.openGapMaxMs, 1)})` : ''
    const stalls = s.openStalls ? `${s.stalls} + ${s.openStalls} open at the end` : String(s.stalls)
    const overlaps = s.overlaps ? `, **${s.overlaps} overlapping hold(s): not exclusive**` : ''
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.handoffs)} (${s.runs}, ${fmt(s.seconds, 1)} s)${s.capped ? `, ${s.capped} round(s) capped` : ''}${overlaps} | ` +
      `${fmtInt(s.handoffsPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${cs ? `${fmtInt(s.csPerSec)} | ` : ''}${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ${fmt(s.maxGap, 1)}${open} | ${stalls} | ` +
      `${fmt(100 * s.sameWorker, 1)} % | ${other ? `${fmtInt(s.otherHandoffs)}, ${fmt(s.otherP50, 3)} / ${fmt(s.otherP99, 3)} | ` : ''}` +
      `${order ? `${orderCell(s)} | ` : ''}` +
      `${fmt(s.waitP50, 2)} / ${fmt(s.waitP99, 1)} / ${fmt(s.waitMax, 1)} | ${fmt(s.procCpuUs, 1)} |`)
  }
  return lines.join('\n')
}

/** The share of grants that went to the longest-waiting waiter: "100.0 % (n of n)". */
const orderShare = (s) => s && s.ordered ? 100 * s.inOrder / s.ordered : NaN
const orderCell = (s) => s && s.ordered ? `${fmt(orderShare(s), 1)} % (${fmtInt(s.inOrder)} of ${fmtInt(s.ordered)})` : 'n/a'

// ---------------------------------------------------------------- redisson-sync

const cpuCells = (s) => `${fmt(s.procCpuUs, 1)} | ${fmt(s.jsCpuUs, 1)}`

/** Read-write lock under readers + a writer on one name, and the exclusive baseline: per group cycles/s and latency. */
function syncRwTable (sc) {
  const lines = [
    '| contender | readers: cycles/s median (min–max) | readers p50 / p99 ms | writer: cycles/s median (min–max) | writer p50 / p99 / max ms | writer\'s longest open cycle at a deadline ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    const r = s.groups.readers
    const w = s.groups.writer
    lines.push(`| ${nameOf(id)} | ${fmtInt(r.cyclesPerSec)} (${fmtInt(r.min)}–${fmtInt(r.max)}) | ${fmt(r.p50, 3)} / ${fmt(r.p99, 3)} | ` +
      `${fmtInt(w.cyclesPerSec)} (${fmtInt(w.min)}–${fmtInt(w.max)}) | ${fmt(w.p50, 3)} / ${fmt(w.p99, 3)} / ${fmt(w.maxMs, 1)} | ${fmt(w.openMaxMs, 1)} | ` +
      `${cpuCells(s)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/** Uncontended locks per kind: cycles/s, × our getLock, × node-redisson's getLock, CPU and Redis commands. */
function syncLockTable (sc) {
  const ours = sc[SYNC_LOCK]
  const peer = sc[NODE_REDISSON]
  const lines = [
    '| contender | cycles/s median (min–max) | × our getLock | × node-redisson | p50 ms | p99 ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    const r = (b) => b ? times(ratio(s.cyclesPerSec, b.cyclesPerSec)) : 'n/a'
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${r(ours)} | ${r(peer)} | ${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ` +
      `${cpuCells(s)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/** Semaphores shared by many workers: cycles/s, × redis-semaphore, CPU and Redis commands. */
function syncSharedTable (sc) {
  const peer = sc[SYNC_SEM_PEER]
  const lines = [
    '| contender | cycles/s median (min–max) | × redis-semaphore | p50 ms | p99 ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${peer ? times(ratio(s.cyclesPerSec, peer.cyclesPerSec)) : 'n/a'} | ` +
      `${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ${cpuCells(s)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/** The redisson-sync section's same-run ratios, one line each (informational, no PASS / MISS). */
function redissonSyncLines (Rs) {
  if (!Rs) return []
  const out = []
  const rw = Rs.rw || {}
  const a = rw[SYNC_RW]
  const b = rw[SYNC_RW_EXCLUSIVE]
  if (a && b) {
    const g = (s, n) => s.groups[n].cyclesPerSec
    out.push(`read-write lock, ${a.groups.readers.workers} readers + 1 writer on one name: readers ${fmtInt(g(a, 'readers'))}/s, writer ${fmtInt(g(a, 'writer'))}/s; ` +
      `the same workers on getLock: ${fmtInt(g(b, 'readers'))}/s, ${fmtInt(g(b, 'writer'))}/s; sharing reads: readers ${times(ratio(g(a, 'readers'), g(b, 'readers')))}, writer ${times(ratio(g(a, 'writer'), g(b, 'writer')))}`)
  }
  for (const [c, sc] of Object.entries(Rs.uncontended || {})) {
    const base = sc[SYNC_LOCK]
    const peer = sc[NODE_REDISSON]
    const cell = (id, what) => sc[id] ? `${what} ${fmtInt(sc[id].cyclesPerSec)} (${base ? times(ratio(sc[id].cyclesPerSec, base.cyclesPerSec)) : 'n/a'} getLock)` : null
    out.push(`uncontended, ${workersLabel(c)}, cycles/s: ${[cell('redisson-rs-read', 'read lock'), cell('redisson-rs-write', 'write lock')].filter(Boolean).join(', ')}; ` +
      `getLock ${base ? fmtInt(base.cyclesPerSec) : 'n/a'}; node-redisson getLock ${peer ? fmtInt(peer.cyclesPerSec) : 'n/a'}`)
  }
  const f = Rs.fair || {}
  if (f[SYNC_FAIR]) {
    const l = f[SYNC_LOCK_HANDOFF]
    const share = orderShare(f[SYNC_FAIR])
    out.push(`fair lock, ${f[SYNC_FAIR].handoffs} handoffs: p50 / p99 ${fmt(f[SYNC_FAIR].p50, 3)} / ${fmt(f[SYNC_FAIR].p99, 3)} ms, ` +
      `to the longest waiter ${orderCell(f[SYNC_FAIR])}${Number.isFinite(share) && share < 100 ? ' — BELOW 100 %: not first come, first served' : ''}; ` +
      `getLock (not fair) ${l ? `${fmt(l.p50, 3)} / ${fmt(l.p99, 3)} ms, to the longest waiter ${orderCell(l)}` : 'n/a'}`)
  }
  for (const [c, { limit, results: sc }] of Object.entries(Rs.shared || {})) {
    const peer = sc[SYNC_SEM_PEER]
    const cell = (id, what) => sc[id] ? `${what} ${fmtInt(sc[id].cyclesPerSec)} (${peer ? times(ratio(sc[id].cyclesPerSec, peer.cyclesPerSec)) : 'n/a'})` : null
    out.push(`semaphore, ${workersLabel(c)}, ${limit} permits, cycles/s (× redis-semaphore): ` +
      [cell(SYNC_SEMAPHORE, 'getSemaphore'), cell(SYNC_SEM_FACE, 'redislock-rs/semaphore'), cell(SYNC_PES, 'getPermitExpirableSemaphore')].filter(Boolean).join(', ') +
      `; redis-semaphore ${peer ? fmtInt(peer.cyclesPerSec) : 'n/a'}`)
  }
  return out
}

function redissonSyncSection (Rs, cfg) {
  const parts = [
    '## Redisson\'s synchronizers: read-write lock, fair lock, semaphores (issue 23; informational, no targets)',
    '',
    `Method: \`require('redislock-rs/redisson')\` (REDISLOCK_RS_ENGINE=js), each contender in a child process of its own with one \`new Redisson({ redis: { options: { host, port } } })\` shared by all its workers, ` +
      `on the main redis-server (${Rs.server}), interleaved and rotated per round (${cfg.rounds} round(s)), medians. The machine may be shared: compare within a table (same run), not across runs. ` +
      `Read-write lock: ${cfg.syncRwReaders} readers and 1 writer in ONE child on ONE name, each its own object (own clientId): readers loop \`readLock().lock(10000)\` + \`unlock()\`, the writer \`writeLock().lock(10000)\`, a ${cfg.csMs} ms critical section, \`unlock()\`; ` +
      `the baseline is the same ${cfg.syncRwReaders + 1} workers on \`getLock\` (exclusive). ${cfg.duration} ms after a ${cfg.warmup} ms warm-up; only cycles completed within the ${cfg.duration} ms count (a starving writer shows 0, and its open cycle at the deadline). ` +
      `Uncontended: every worker its own name, \`tryLock(0, 10000)\` + \`unlock()\` (as the Redisson face section), read lock, write lock and getLock of ours, node-redisson@${pkgVersion('node-redisson')}'s getLock for reference. ` +
      `Fair lock: ${cfg.syncHandoffWorkers} waiters on ONE \`getFairLock\` name, \`tryLock(false, 10000)\` (wait forever) + \`unlock()\`, the Redisson face section's handoff measurement (the releaser stays out until another worker holds; ${cfg.syncHandoffDuration} ms per round); ` +
      '"grants to the longest waiter" = acquisitions that went to the worker whose call started first among those still waiting (first come, first served: must be 100 % for the fair lock), next to getLock\'s (not fair). ' +
      `Semaphores: ${cfg.syncSemaphoreWorkers.join(' and ')} workers on ONE semaphore of workers / 2 permits, \`acquire()\` + \`release()\` in a loop: \`getSemaphore\` (\`trySetPermits\` once before the clock), ` +
      `redis-semaphore@${pkgVersion('redis-semaphore')}'s \`new Semaphore(client, key, limit, { refreshInterval: 0, retryInterval: 10 })\` per cycle over one ioredis@${pkgVersion('ioredis')} client, and this package's redislock-rs/semaphore \`Semaphore\` through the same code; ` +
      `\`getPermitExpirableSemaphore\` \`acquire(10000)\` → id + \`release(id)\` at ${cfg.syncPesWorkers.join(', ')} workers. The semaphore ratio is like for like in what it guarantees (a counting semaphore on one key), not in data layout or wake-up mechanism (pub/sub vs polling every 10 ms). ` +
      'Redis cmds/cycle = the INFO commandstats delta / cycles (incl. the commands run inside Lua).',
    ''
  ]
  if (Rs.rw) parts.push(`### Read-write lock: ${cfg.syncRwReaders} readers + 1 writer (${cfg.csMs} ms held) on one name, vs the same workers on getLock`, '', syncRwTable(Rs.rw), '')
  for (const [c, sc] of Object.entries(Rs.uncontended || {})) {
    parts.push(`### Redisson locks, uncontended: ${workersLabel(c)}, each on its own name`, '', syncLockTable(sc), '')
  }
  if (Rs.fair) {
    parts.push(`### Fair lock, handoff: ${cfg.syncHandoffWorkers} waiters on one name, ~0 ms hold, vs getLock`, '', handoffTable(Rs.fair, cfg.stallMs, { order: true }), '')
  }
  for (const [c, { limit, results }] of Object.entries(Rs.shared || {})) {
    parts.push(`### Semaphores: ${workersLabel(c)} on one semaphore of ${limit} permits`, '', syncSharedTable(results), '')
  }
  parts.push('Same-run ratios (informational, no target):', '', ...redissonSyncLines(Rs).map((t) => `- ${t}`), '')
  return parts
}

function redissonSection (Rr, checks, cfg) {
  const line = (t) => `- **${t.status}** ${t.name}: ${t.detail}`
  const parts = [
    '## Redisson face: redislock-rs/redisson vs node-redisson (not among issue 9\'s targets)',
    '',
    `Method: \`require('redislock-rs/redisson')\` (REDISLOCK_RS_ENGINE=js) against node-redisson@${pkgVersion('node-redisson')}, each in a child process of its own ` +
      'with one `new Redisson({ redis: { options: { host, port } } })` shared by all its workers, on the same redis-server as above, interleaved and rotated per round ' +
      `(${cfg.rounds} round(s)), medians. Uncontended: every worker its own lock name, \`tryLock(0, 10000)\` then \`unlock()\` in a loop, ${cfg.duration} ms after a ${cfg.warmup} ms warm-up. ` +
      `Handoff: ${cfg.handoffWorkers} workers, one lock object (own random clientId) each, on ONE lock name, each looping \`tryLock(false, 10000)\` (wait forever), a counter increment, \`unlock()\`; ` +
      'a handoff is the time from the start of the previous holder\'s `unlock()` call to the next `tryLock` resolving (process.hrtime.bigint(), same process), and the releaser stays out until another worker has had the lock (issue 10: "the holder unlocks and stays out"), and only acquisitions by workers already waiting when the release started count (late arrivals are counted apart). ' +
      `Recorded for ${cfg.handoffDuration} ms per round after a ${cfg.warmup} ms warm-up (at least ${cfg.handoffMin} handoffs, ${cfg.handoffCapExtraMs / 1000} s more at most); ` +
      'percentiles over all rounds\' handoffs pooled. Workers still waiting when a round ends are abandoned (not drained); a release still waiting for its next holder then is reported as an open gap. ' +
      '"Wait in tryLock" = from a worker\'s tryLock call to its resolving (how long a worker waits its turn).',
    ''
  ]
  for (const [c, sc] of Object.entries(Rr.uncontended)) {
    parts.push(`### Redisson face, uncontended: ${workersLabel(c)}, each on its own lock name`, '', redissonUncontendedTable(sc), '')
  }
  if (Rr.handoff) {
    parts.push(`### Redisson face, handoff: ${cfg.handoffWorkers} workers on one lock name, ~0 ms hold`, '', handoffTable(Rr.handoff, cfg.stallMs), '')
  }
  parts.push(...checks.map(line), '')
  return parts
}

function wakeSection (Rw, checks, cfg) {
  const line = (t) => `- **${t.status}** ${t.name}: ${t.detail}`
  return [
    '## Wake on release: handoff under contention, redislock face (not among issue 9\'s targets)',
    '',
    `Method: ${cfg.wakeWorkers} workers in ONE child process per contender (one Redis connection shared by all, plus whatever the library opens for itself), all on ONE key, ` +
      `one lock object each, each looping acquire (waiting as long as it takes, retrying every ${cfg.wakeDelay} ms), a counter increment (no await, a ~0 ms hold), release. ` +
      `redislock-rs: \`createLock({host, port}, {timeout: 10000, retries: -1, delay: ${cfg.wakeDelay}})\` (REDISLOCK_RS_ENGINE=js), once with \`wakeOnRelease: true\` on every lock (holders and waiters) and once without (plain polling); ` +
      `redislock@1.3.0 \`retries: -1, delay: ${cfg.wakeDelay}\`; redlock \`retryCount: -1, retryDelay: ${cfg.wakeDelay}, retryJitter: 0\`; redis-semaphore Mutex \`retryInterval: ${cfg.wakeDelay}\`, acquireTimeout 600 s, refreshInterval 0. ` +
      'A handoff is the time from the start of the previous holder\'s `release()` call to the next `acquire()` resolving (process.hrtime.bigint(), same process); the releaser stays out until another worker has had the lock, and only acquisitions by workers already waiting when the release started count; ' +
      'only acquisitions by workers already waiting when the release started count as handoffs (a late arrival, whose acquire began after the release and won by its immediate first attempt, is counted apart as "late arrivals"). ' +
      `Interleaved and rotated per round (${cfg.rounds} round(s)), recorded for ${cfg.wakeDuration} ms per round after a ${cfg.warmup} ms warm-up (at least ${cfg.handoffMin} handoffs, ${cfg.handoffCapExtraMs / 1000} s more at most); ` +
      'percentiles over all rounds\' handoffs pooled, handoffs/s the median of the rounds. Waiters still waiting when a round ends are abandoned (not drained). ' +
      '"Wait in acquire" = from a worker\'s acquire call to its resolving.',
    '',
    handoffTable(Rw, cfg.stallMs, { wait: 'acquire', other: true }),
    '',
    ...checks.map(line),
    ''
  ]
}

function quorumSection (Rq, checks, cfg) {
  const line = (t) => `- **${t.status}** ${t.name}: ${t.detail}`
  const n = Rq.servers.length
  const parts = [
    `## Redlock on ${n} servers: redislock-rs vs node-redlock (not among issue 9's targets)`,
    '',
    `Method: ${n} more redis-servers started for this section (\`--save '' --appendonly no\`, free ports: ${Rq.servers.join(', ')}; the same machine, so no network between them) and stopped after it. ` +
      `Each contender in a child process of its own, one connection per server shared by all its workers, interleaved and rotated per round (${cfg.rounds} round(s)), medians. ` +
      `Uncontended: every worker its own key, acquire + release in a loop, ${cfg.duration} ms after a ${cfg.warmup} ms warm-up. ` +
      'redislock-rs: `createLock([s1, s2, s3], { timeout: 10000, retries: 0 })` per worker (s1…s3 = `{ host, port }`, the same objects for every lock), once with REDISLOCK_RS_ENGINE=js (JS-thread engine, the default) and once with =tokio; ' +
      `redlock@${pkgVersion('redlock')}: \`new Redlock([c1, c2, c3], { retryCount: 0, retryJitter: 0 })\` over one ioredis@${pkgVersion('ioredis')} client per server, shared by the workers, \`lock(key, 10000)\` then \`unlock()\`. ` +
      'Redis cmds/cycle = the INFO commandstats deltas of all the servers, summed, / cycles.',
    ''
  ]
  for (const [c, sc] of Object.entries(Rq.uncontended)) {
    parts.push(`### Redlock on ${n} servers, uncontended: ${workersLabel(c)}, each on its own key`, '', quorumTable(sc), '')
  }
  parts.push(...checks.map(line), '')
  return parts
}

function redlockFaceSection (Rf, checks, cfg) {
  const line = (t) => `- **${t.status}** ${t.name}: ${t.detail}`
  const parts = [
    `## node-redlock face: redislock-rs/redlock vs redlock@${pkgVersion('redlock')} (issue 20's targets)`,
    '',
    `Method: \`require('redislock-rs/redlock')\` against \`require('redlock')\`, driven by the same harness code (benchmark/contenders.js \`redlockOn\`): ` +
      `\`new Redlock(clients, { retryCount: 0, retryJitter: 0 })\` over one ioredis@${pkgVersion('ioredis')} client per server, one Redlock shared by all the workers, \`lock(key, 10000)\` then \`lock.unlock()\`; ` +
      'ours once with REDISLOCK_RS_ENGINE=js (JS-thread engine, the default) and once with =tokio. ' +
      `Topologies: the main redis-server alone (${Rf[0] ? Rf[0].servers.join(', ') : 'n/a'}), then ${cfg.redlockFaceServers} more redis-servers started for this section (\`--save '' --appendonly no\`, free ports: ${Rf[1] ? Rf[1].servers.join(', ') : 'n/a'}; the same machine, so no network between them) and stopped after it. ` +
      `Each contender in a child process of its own, interleaved and rotated per round (${cfg.rounds} round(s)), medians. ` +
      `Uncontended: every worker its own key, ${cfg.duration} ms after a ${cfg.warmup} ms warm-up. ` +
      `Contention (informational, no target): ${cfg.contentionWorkers} workers on ONE key, one Redlock per retry delay shared by them (\`retryCount: -1, retryDelay: <delay>, retryJitter: 0\`), a ${cfg.csMs} ms critical section, ${cfg.contentionDuration} ms. ` +
      'Redis cmds/cycle = the INFO commandstats deltas of all the servers, summed, / cycles. Targets (issue 20), judged on the JS-thread engine (the tokio engine\'s ratios informational), same-run ratios: ' +
      Object.entries(REDLOCK_FACE_TARGETS).map(([c, x]) => `≥ ${x}× at ${workersLabel(c)}`).join(', ') + '.',
    ''
  ]
  for (const topo of Rf) {
    const n = topo.servers.length
    for (const [c, sc] of Object.entries(topo.uncontended)) {
      parts.push(`### node-redlock face, ${serversLabel(n)}, uncontended: ${workersLabel(c)}, each on its own key`, '', quorumTable(sc), '')
    }
    for (const [d, sc] of Object.entries(topo.contention || {})) {
      parts.push(`### node-redlock face, ${serversLabel(n)}, contention: ${cfg.contentionWorkers} workers on one key, retry delay ${d} ms, ${cfg.csMs} ms critical section`, '', redlockFaceContentionTable(sc), '')
    }
  }
  parts.push(...checks.map(line), '', ...redlockFaceContention(Rf).map((t) => `- ${t}`), '')
  return parts
}

function semaphoreFaceSection (Rs, checks, cfg) {
  const line = (t) => `- **${t.status}** ${t.name}: ${t.detail}`
  const v = pkgVersion('redis-semaphore')
  const parts = [
    `## redis-semaphore face: redislock-rs/semaphore vs redis-semaphore@${v}`,
    '',
    `Method: \`require('redislock-rs/semaphore')\` against \`require('redis-semaphore')\`, driven by the same harness code (benchmark/contenders.js \`semaphoreOn\`): ` +
      `one ioredis@${pkgVersion('ioredis')} client per process (ours reads its options and opens a connection of its own; the client stays open), shared by all the workers; ` +
      `a NEW lock object per cycle, as redis-semaphore's users construct one per use, the same for both libraries: \`new Mutex(client, key, { refreshInterval: 0 })\` or \`new Semaphore(client, key, ${cfg.semaphoreFaceLimit}, { refreshInterval: 0 })\` ` +
      '(the other options at their defaults: lockTimeout 10 s, acquireTimeout 10 s, retryInterval 10 ms), then `await lock.acquire(); await lock.release()`; ' +
      `ours once with REDISLOCK_RS_ENGINE=js (JS-thread engine, the default) and once with =tokio. On the main redis-server (${Rs.server}). ` +
      `Each contender in a child process of its own, interleaved and rotated per round (${cfg.rounds} round(s)), medians. ` +
      `Uncontended: every worker its own key, ${cfg.duration} ms after a ${cfg.warmup} ms warm-up. ` +
      `Contention (Mutex, informational, no target): ${cfg.contentionWorkers} workers on ONE key, a new Mutex per cycle with \`acquireTimeout: 600000, retryInterval: <delay>\`, a ${cfg.csMs} ms critical section, ${cfg.contentionDuration} ms. ` +
      'Redis cmds/cycle = the INFO commandstats delta / cycles (incl. the commands run inside Lua). Targets, same-run ratios, judged on the JS-thread engine (the tokio engine\'s ratios given too, informational): ' +
      Object.entries(SEMAPHORE_FACE_TARGETS).map(([c, x]) => `≥ ${x}× at ${workersLabel(c)}`).join(', ') + ', for both kinds.',
    ''
  ]
  for (const [kind, Kind] of SEMAPHORE_FACE_KINDS) {
    for (const [c, sc] of Object.entries(Rs.uncontended[kind] || {})) {
      parts.push(`### redis-semaphore face, ${Kind}${kind === 'semaphore' ? ` (limit ${cfg.semaphoreFaceLimit})` : ''}, uncontended: ${workersLabel(c)}, each on its own key`, '', semaphoreFaceTable(sc, semPeer(kind)), '')
    }
  }
  for (const [d, sc] of Object.entries(Rs.contention || {})) {
    parts.push(`### redis-semaphore face, Mutex, contention: ${cfg.contentionWorkers} workers on one key, retryInterval ${d} ms, ${cfg.csMs} ms critical section`, '', semaphoreFaceContentionTable(sc), '')
  }
  parts.push(...checks.map(line), '', ...semaphoreFaceContention(Rs).map((t) => `- ${t}`), '')
  parts.push('For the README\'s table (ours, JS-thread engine / tokio engine, ÷ redis-semaphore, cycles/s; bold: below the target):', '',
    '| kind | ' + (cfg.semaphoreFaceWorkers || []).map((c) => workersLabel(c)).join(' | ') + ' |',
    '|---|' + (cfg.semaphoreFaceWorkers || []).map(() => '---:|').join(''), ...semaphoreFaceReadmeRows(Rs), '')
  return parts
}

function clusterSection (Rc, cfg) {
  const n = Rc.primaries.length
  const parts = [
    `## Redis Cluster (${n} primaries): redislock-rs vs node-redlock and redislock (not among issue 9's targets)`,
    '',
    `Method: a Redis Cluster of ${n} primaries, no replicas, started for this section (__test__/helpers/cluster.js: \`--save '' --appendonly no\`, \`--cluster-enabled yes\`, free ports: ${Rc.primaries.join(', ')}, ` +
      '`redis-cli --cluster create`; the same machine, so no network between them) and stopped after it. ' +
      `Each contender in a child process of its own with ONE cluster client (a connection per primary) shared by all its workers, interleaved and rotated per round (${cfg.rounds} round(s)), medians. ` +
      `Uncontended: every worker its own key (\`bench:cluster:<contender>:<workers>:<round>:<worker>\`, so the workers' keys spread over the slots and primaries), acquire + release in a loop, ${cfg.duration} ms after a ${cfg.warmup} ms warm-up. ` +
      'redislock-rs: `createLock({ cluster: [url, …] }, { timeout: 10000, retries: 0 })` per worker, the same options object for every lock (a cluster always runs on the tokio engine: the redis crate\'s cluster client); ' +
      `redlock@${pkgVersion('redlock')}: \`new Redlock([cluster], { retryCount: 0, retryJitter: 0 })\`, \`lock(key, 10000)\` then \`unlock()\`; ` +
      `redislock@${pkgVersion('redislock')}: \`createLock(cluster, { timeout: 10000, retries: 0 })\` per worker; both over one ioredis@${pkgVersion('ioredis')} \`Cluster\` client. ` +
      'Redis cmds/cycle = the INFO commandstats deltas of all the primaries, summed, / cycles. "× redlock" / "× redislock" = the row\'s cycles/s over that peer\'s, in the same run.',
    ''
  ]
  for (const [c, sc] of Object.entries(Rc.uncontended)) {
    parts.push(`### Redis Cluster, uncontended: ${workersLabel(c)}, each on its own key`, '', clusterTable(sc), '')
  }
  parts.push('redislock-rs to each peer (informational, no target):', '', ...clusterRatios(Rc).map((t) => `- ${t}`), '')
  parts.push('For the README\'s table (scenario | redislock-rs | peer | ratio):', '', '| scenario | redislock-rs | peer | ratio |', '|---|---:|---:|---:|', ...clusterReadmeRows(Rc), '')
  return parts
}

function valkeySection (Rv, checks, cfg) {
  const line = (t) => `- **${t.status}** ${t.name}: ${t.detail}`
  const title = '## Valkey 9: redislock-rs Lua-free vs scripted, and the JavaScript contenders (issue 35)'
  if (!Rv.available) return [title, '', `Skipped: ${Rv.reason}.`, '']
  const parts = [
    title,
    '',
    `Method: a valkey-server started for this section (${Rv.version}, \`${Rv.bin}\`, found or installed by scripts/valkey.js; \`--save '' --appendonly no\`, free port: ${Rv.server}; the same machine) and stopped after it. ` +
      `Each contender in a child process of its own, one connection shared by all its workers, interleaved and rotated per round (${cfg.rounds} round(s)), medians. ` +
      `Uncontended: every worker its own key, acquire + release in a loop, ${cfg.duration} ms after a ${cfg.warmup} ms warm-up. ` +
      'redislock-rs: `createLock({host, port}, {timeout: 10000, retries: 0, delay: 50})` per worker on the JS-thread engine (REDISLOCK_RS_ENGINE=js), the same code twice: ' +
      'Lua-free (the default on a server with DELIFEQ: release `DELIFEQ key token`; REDISLOCK_RS_LUA_FREE=1 in the child) and scripted (REDISLOCK_RS_LUA_FREE=0 in the child: release by EVALSHA, as on Redis 7). ' +
      `The JavaScript contenders are the uncontended section's (${JS_IDS.join(', ')}), running their Lua scripts on Valkey; "best JS" = the fastest of them in the same table. ` +
      'Server CPU µs/cycle = the valkey-server\'s `used_cpu_user` + `used_cpu_sys` (INFO cpu: getrusage of the whole process) over the measured interval, read by the child just before and after it, / cycles ' +
      '(the interval also holds the child\'s two INFO commandstats; the server\'s own cron runs in it too). Redis cmds/cycle = the INFO commandstats delta / cycles (incl. the commands run inside Lua). ' +
      'Targets, same-run ratios: server CPU per cycle, Lua-free ' + Object.entries(VALKEY_CPU_TARGETS).map(([c, x]) => `≤ ${x}× scripted at ${workersLabel(c)}`).join(', ') + '; cycles/s, Lua-free ' +
      Object.entries(VALKEY_THROUGHPUT_TARGETS).map(([c, x]) => `≥ ${x.scripted}× scripted and ≥ ${x.js}× the best JS contender at ${workersLabel(c)}`).join(', ') + '.',
    ''
  ]
  for (const [c, sc] of Object.entries(Rv.uncontended)) {
    parts.push(`### Valkey, uncontended: ${workersLabel(c)}, each on its own key`, '', valkeyTable(sc), '')
  }
  parts.push(...checks.map(line), '')
  return parts
}

// ---------------------------------------------------------------- web-locks

/** The web-locks section, uncontended: cycles/s, × the redislock face's plain lock (createLock), latency, CPU and Redis commands per cycle. */
function webLocksUncontendedTable (sc) {
  const base = sc[RS]
  const lines = [
    '| contender | cycles/s median (min–max) | × createLock | p50 ms | p99 ms | process CPU µs/cycle | JS-thread CPU µs/cycle | Redis cmds/cycle (cmdstat, incl. inside Lua) |',
    '|---|---:|---:|---:|---:|---:|---:|---|'
  ]
  for (const [id, s] of Object.entries(sc)) {
    lines.push(`| ${nameOf(id)} | ${fmtInt(s.cyclesPerSec)} (${fmtInt(s.min)}–${fmtInt(s.max)}) | ${base ? times(ratio(s.cyclesPerSec, base.cyclesPerSec)) : 'n/a'} | ` +
      `${fmt(s.p50, 3)} | ${fmt(s.p99, 3)} | ${cpuCells(s)} | ${fmt(s.callsPerCycle)} (${cmdBreakdown(s.commands)}) |`)
  }
  return lines.join('\n')
}

/**
 * The web-locks section's same-run ratios, one line each (informational,
 * no PASS / MISS); a handoff that was not first come, first served or
 * not exclusive is flagged.
 */
function webLocksLines (Rw) {
  if (!Rw) return []
  const out = []
  for (const [c, sc] of Object.entries(Rw.uncontended || {})) {
    const base = sc[RS]
    const cell = (id, what) => sc[id] ? `${what} ${fmtInt(sc[id].cyclesPerSec)} (${base ? times(ratio(sc[id].cyclesPerSec, base.cyclesPerSec)) : 'n/a'} createLock)` : null
    out.push(`uncontended, ${workersLabel(c)}, cycles/s: ` + [cell(WEB_LOCKS_EXCLUSIVE, 'request() exclusive'), cell(WEB_LOCKS_SHARED, 'shared')].filter(Boolean).join(', ') +
      `; createLock acquire + release ${base ? fmtInt(base.cyclesPerSec) : 'n/a'}`)
  }
  const h = Rw.handoff || {}
  const a = h[WEB_LOCKS_EXCLUSIVE]
  if (a) {
    const b = h[RS_WAKE]
    const share = orderShare(a)
    const flags = [
      ...(Number.isFinite(share) && share < 100 ? ['BELOW 100 %: not first come, first served'] : []),
      ...(a.overlaps ? [`${a.overlaps} OVERLAPPING HOLD(S): not exclusive`] : [])
    ]
    out.push(`handoff, ${fmtInt(a.handoffs)} handoffs: request() p50 / p99 ${fmt(a.p50, 3)} / ${fmt(a.p99, 3)} ms, ${fmtInt(a.csPerSec)} critical sections/s, ` +
      `to the longest waiter ${orderCell(a)}${flags.length ? ` — ${flags.join('; ')}` : ''}; ` +
      `createLock wakeOnRelease ${b ? `${fmt(b.p50, 3)} / ${fmt(b.p99, 3)} ms, ${fmtInt(b.csPerSec)} critical sections/s (p50 ${times(ratio(a.p50, b.p50))}, critical sections/s ${times(ratio(a.csPerSec, b.csPerSec))})` : 'n/a'}`)
  }
  const m = Rw.mix || {}
  const x = m[WEB_LOCKS_SHARED]
  const y = m[WEB_LOCKS_EXCLUSIVE]
  if (x && y) {
    const g = (s, n) => s.groups[n].cyclesPerSec
    out.push(`mix, ${x.groups.readers.workers} shared + 1 exclusive on one name: shared ${fmtInt(g(x, 'readers'))}/s, exclusive ${fmtInt(g(x, 'writer'))}/s; ` +
      `the same workers all exclusive: ${fmtInt(g(y, 'readers'))}/s, ${fmtInt(g(y, 'writer'))}/s; sharing: the ${x.groups.readers.workers} ${times(ratio(g(x, 'readers'), g(y, 'readers')))}, the exclusive one ${times(ratio(g(x, 'writer'), g(y, 'writer')))}`)
  }
  return out
}

function webLocksSection (Rw, cfg) {
  const parts = [
    '## Web Locks face: redislock-rs/web-locks next to the redislock face (issue 36; informational, no targets)',
    '',
    `Method: \`require('redislock-rs/web-locks')\` (REDISLOCK_RS_ENGINE=js), each contender in a child process of its own with one \`new LockManager({ host, port }, { prefix: 'weblocks:bench:', lease: 10000 })\` shared by all its workers, ` +
      `on the main redis-server (${Rw.server}), interleaved and rotated per round (${cfg.rounds} round(s)), medians. The machine may be shared: compare within a table (same run), not across runs. ` +
      `Uncontended: every worker its own name, \`await locks.request(name, async () => {})\` (exclusive) or \`request(name, { mode: 'shared' }, async () => {})\` in a loop, ${cfg.duration} ms after a ${cfg.warmup} ms warm-up, ` +
      'next to the redislock face\'s plain lock in the same run (`createLock({host, port}, {timeout: 10000, retries: 0, delay: 50})` per worker, acquire + release, every worker its own key; "× createLock"). ' +
      `Handoff: ${cfg.webLocksHandoffWorkers} workers in ONE child, all on ONE name, each looping an exclusive \`request(name, cb)\` whose callback holds the lock ~1 ms (a 1 ms timer) and then settles; ` +
      'a handoff is the time from the end of the holder\'s callback (its promise settled) to the start of the next holder\'s callback (process.hrtime.bigint(), same process), the wake section\'s measurement (benchmark/measure.js runHandoffs): ' +
      'the releaser stays out until another worker holds, and only grants to requests made before the release count (late arrivals apart); "grants to the longest waiter" = grants to the worker whose request() started first among those waiting (Web Locks grants in order: 100 %). ' +
      `Next to it the redislock face waking on release: \`createLock({host, port}, {timeout: 10000, retries: -1, delay: ${cfg.webLocksDelay}, wakeOnRelease: true})\`, one lock per worker, acquire, ~1 ms, release, the same measurement. ` +
      `Critical sections/s = every grant while recording (late arrivals too) / s. ${cfg.webLocksHandoffDuration} ms recorded per round after a ${cfg.warmup} ms warm-up (at least ${cfg.handoffMin} handoffs, ${cfg.handoffCapExtraMs / 1000} s more at most); percentiles over all rounds' handoffs pooled. ` +
      `Mix: ${cfg.webLocksMixReaders} workers looping \`request(name, { mode: 'shared' }, async () => {})\` and 1 looping an exclusive request holding ${cfg.csMs} ms, all on ONE name in one child, ${cfg.duration} ms after a ${cfg.warmup} ms warm-up ` +
      '(only requests completed within the time count), next to the same workers all exclusive. ' +
      'Redis cmds/cycle = the INFO commandstats delta / cycles (incl. the commands run inside Lua).',
    ''
  ]
  for (const [c, sc] of Object.entries(Rw.uncontended || {})) {
    parts.push(`### Web Locks, uncontended: ${workersLabel(c)}, each on its own name`, '', webLocksUncontendedTable(sc), '')
  }
  if (Rw.handoff) {
    parts.push(`### Web Locks, handoff: ${cfg.webLocksHandoffWorkers} workers on one name, ~1 ms hold, vs createLock with wakeOnRelease`, '',
      handoffTable(Rw.handoff, cfg.stallMs, { wait: 'request / acquire', order: true, cs: true }), '')
  }
  if (Rw.mix) {
    parts.push(`### Web Locks, mix: ${cfg.webLocksMixReaders} shared + 1 exclusive (${cfg.csMs} ms held) on one name, vs the same workers all exclusive`, '',
      'Columns: "readers" = the shared requests (all exclusive in the baseline row), "writer" = the exclusive one.', '', syncRwTable(Rw.mix), '')
  }
  parts.push('Same-run ratios (informational, no target):', '', ...webLocksLines(Rw).map((t) => `- ${t}`), '')
  return parts
}

// ---------------------------------------------------------------- report

function machine () {
  const v = (cmd, args) => { try { return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() } catch (_) { return 'unknown' } }
  const pkgV = (p) => { try { return require(`${p}/package.json`).version } catch (_) { return 'missing' } }
  const root = path.join(__dirname, '..')
  return {
    nproc: os.cpus().length,
    cpu: (os.cpus()[0] || {}).model || 'unknown',
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    redis: v('redis-server', ['--version']),
    git: v('git', ['-C', root, 'log', '-1', '--format=%h %s']),
    dirty: v('git', ['-C', root, 'status', '--short', '--', 'src', 'lib', 'index.js', 'Cargo.toml']).split('\n').filter(Boolean).length,
    addon: (() => {
      try {
        const f = fs.readdirSync(root).find((x) => x.endsWith('.node'))
        const st = fs.statSync(path.join(root, f))
        return `${f}, ${mib(st.size)} MiB, built ${st.mtime.toISOString()}`
      } catch (_) { return 'missing' }
    })(),
    packages: ['redislock', 'redis3', 'redlock', 'redis-semaphore', 'ioredis', 'bluebird', 'node-redisson'].map((p) => `${p}@${pkgV(p)}`).join(', ')
  }
}

const pkgVersion = (p) => { try { return require(`${p}/package.json`).version } catch (_) { return 'missing' } }

/**
 * The markdown report. `cfg` is the run's configuration (index.js); `rchecks`
 * from redissonChecks, `wchecks` from wakeChecks, `qchecks` from
 * quorumChecks, `fchecks` from redlockFaceChecks, `schecks` from
 * semaphoreFaceChecks, `vchecks` from valkeyChecks. A partial run
 * (BENCH_SECTIONS) renders the sections it ran only.
 */
function render (R, tgs, others, meta, cfg, rchecks = [], wchecks = [], qchecks = [], fchecks = [], schecks = [], vchecks = []) {
  const ran = (section) => !cfg.sections || cfg.sections.includes(section)
  const m = meta.machine
  const changed = ['git', 'dirty', 'addon'].filter((k) => meta.machineAtEnd && meta.machineAtEnd[k] !== m[k])
  const line = (t) => `- **${t.status}** ${t.name}: ${t.detail}`
  const exampleC = Object.values(R.local.uncontended).map((sc) => sc[C_LIMIT] && sc[C_LIMIT].command).filter(Boolean).pop()
  const parts = [
    `# redislock-rs benchmark${cfg.quick ? ' (QUICK smoke run — not representative)' : ''}`,
    '',
    `Generated by \`${cfg.quick ? 'BENCH_QUICK=1 ' : ''}${cfg.partial ? `BENCH_SECTIONS=${cfg.sections.join(',')} ` : ''}npm run bench\` (= node benchmark/index.js) on ${meta.started}, total ${meta.seconds.toFixed(0)} s.`,
    ...(cfg.partial ? ['', `**Partial run: only the section(s) ${cfg.sections.join(', ')}.** The PASS / MISS lines below cover those only.`] : []),
    '',
    `- Machine: ${m.nproc} CPUs (${m.cpu}), ${m.os}; load average at start ${meta.load0}, at end ${meta.load1}. ` +
      'The machine may be shared with other jobs, so figures are noisy; compare within one run, and see min–max for the spread.',
    `- Node ${m.node}; ${m.redis}`,
    `- Packages: ${m.packages}`,
    `- redislock-rs: commit ${m.git}${m.dirty ? ` (+${m.dirty} uncommitted source files in the working tree)` : ''}; addon ${m.addon}`,
    ...(changed.length ? [`- **Warning: the ${changed.join(', ')} changed during the run** (at the end: ${changed.map((k) => meta.machineAtEnd[k]).join('; ')})${changed.includes('addon') ? ', so the figures may mix two builds' : ''}.`] : []),
    `- Method: one redis-server started by the benchmark (\`--save '' --appendonly no\`). Each measurement is one child process (benchmark/child.js) running one contender, ` +
      'whose workers all share one Redis connection; nothing else runs meanwhile. Per scenario the contenders run interleaved, the start rotated each round, ' +
      `${cfg.rounds} round(s), medians reported (min–max of cycles/s). Uncontended: each worker its own key, acquire + release in a loop for ${cfg.duration} ms after a ${cfg.warmup} ms warm-up in the same process; ` +
      `contention: ${cfg.contentionDuration} ms. TTL 10 s. Latency is per cycle. Process CPU = process.cpuUsage() user+system over the measured interval (every thread, incl. redislock-rs's tokio thread); ` +
      'JS-thread CPU = the main thread\'s CPU time from /proc/self/task/<pid>/schedstat. Redis cmds/cycle = INFO commandstats delta / cycles, which also counts the GET and DEL run inside the release script; ' +
      'the commands a client actually sends are counted separately with MONITOR (commands table).',
    ...(!['uncontended', 'contention', 'audit', 'memory', 'remote'].some(ran) ? [] : ['- Contenders: redislock-rs via `createLock({host, port}, {timeout: 10000, retries: 0, delay: 50})` per worker, once with REDISLOCK_RS_ENGINE=js (JS-thread engine, the default) and once with REDISLOCK_RS_ENGINE=tokio; ' +
      `"best JS" = the fastest of ${JS_IDS.join(', ')} in the same scenario; the JS floor = raw ioredis SET NX PX + EVALSHA compare-and-delete, no auto-pipelining. ` +
      'redlock: retryJitter 0; redis-semaphore: refreshInterval 0, acquireAttemptsLimit 1 when uncontended.']),
    ...(!ran('uncontended') && !ran('remote') ? [] : [`- C limit (informative): ${exampleC ? `\`redis-benchmark\` over one connection with <workers> commands in flight, e.g. \`${exampleC}\`; cycles/s = 1/(1/rps_SET + 1/rps_EVALSHA), latencies = sum of the two commands' percentiles per pipeline round trip.` : 'not measured.'}`]),
    '',
    ...(tgs.length || !cfg.partial ? ['## Targets (issue 9)', '', ...tgs.map(line), ''] : []),
    ...(ran('remote') ? [`Remote scenario: ${R.remote.available ? R.remote.description : `not available here (${R.remote.reason})`}`, ''] : []),
    ...(R.remote.targets ? [...R.remote.targets.map(line), ''] : []),
    ...(ran('uncontended') || (R.remote && R.remote.uncontended) ? ['## Summary: cycles/s', '', summaryTable(R), ''] : [])
  ]
  for (const [c, sc] of Object.entries(R.local.uncontended)) {
    parts.push(`## Uncontended: ${workersLabel(c)}, each on its own key`, '', uncontendedTable(sc), '')
  }
  if (R.remote.uncontended) {
    for (const [c, sc] of Object.entries(R.remote.uncontended)) {
      parts.push(`## Remote Redis (${R.remote.description}): ${workersLabel(c)}`, '', uncontendedTable(sc), '')
    }
  }
  for (const [d, sc] of Object.entries(R.local.contention)) {
    parts.push(`## Contention: ${cfg.contentionWorkers} workers on one key, retry delay ${d} ms, ${cfg.csMs} ms critical section`, '', contentionTable(sc), '')
  }
  if (ran('audit')) parts.push(`## Commands sent per uncontended cycle and threads (MONITOR, ${cfg.auditWorkers} workers, after warm-up; one child per contender)`, '', auditTable(R.local.audit), '')
  if (R.local.memory.length) {
    parts.push(`## Memory: ${fmtInt(cfg.memoryCycles)} acquire+release cycles per contender, each in a fresh \`node --expose-gc\` process, GC forced before each reading`, '', memoryTable(R.local.memory), '')
  }
  if (R.redisson) {
    parts.push(...redissonSection(R.redisson, rchecks, cfg))
  } else if (ran('redisson')) {
    parts.push('## Redisson face', '', cfg.redisson ? 'Not measured.' : 'Skipped (BENCH_NO_REDISSON=1).', '')
  }
  if (R.wake) parts.push(...wakeSection(R.wake, wchecks, cfg))
  if (R.quorum) parts.push(...quorumSection(R.quorum, qchecks, cfg))
  if (R.redlockFace) parts.push(...redlockFaceSection(R.redlockFace, fchecks, cfg))
  if (R.semaphoreFace) parts.push(...semaphoreFaceSection(R.semaphoreFace, schecks, cfg))
  if (R.redissonSync) parts.push(...redissonSyncSection(R.redissonSync, cfg))
  if (R.cluster) parts.push(...clusterSection(R.cluster, cfg))
  if (R.valkey) parts.push(...valkeySection(R.valkey, vchecks, cfg))
  if (R.webLocks) parts.push(...webLocksSection(R.webLocks, cfg))
  if (others.length || !cfg.partial) parts.push('## Other checks (from earlier issues)', '', ...others.map(line), '')
  return parts.join('\n')
}

module.exports = { targets, ratioTargets, otherChecks, redissonChecks, wakeChecks, quorumChecks, redlockFaceChecks, redlockFaceContention, semaphoreFaceChecks, semaphoreFaceContention, redissonSyncLines, clusterRatios, valkeyChecks, webLocksLines, render, machine, pkgVersion, RS, C_LIMIT, REDISSON_RS, NODE_REDISSON, RS_WAKE, RS_QUORUM, RS_CLUSTER, RS_REDLOCK, SEMAPHORE_FACE_RS, SYNC_RS, VALKEY_RS, WEB_LOCKS_RS }
