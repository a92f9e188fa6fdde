'use strict'

/**
 * The benchmark's judging: the contenders' ids, the targets (issue 9's and
 * each face's, ratios within the same run) and their PASS / MISS / n/a
 * checks, and the labels and number formats the report (report.js)
 * renders them with.
 */

const contenders = require('./contenders')

const RS = 'redislock-rs'
const RS_TOKIO = 'redislock-rs-tokio'
const FLOOR = 'js-floor'
const C_LIMIT = 'c-limit'
const REDISSON_RS = 'redisson-rs'
const NODE_REDISSON = 'node-redisson'
const RS_WAKE = 'redislock-rs-wake'
const RS_QUORUM = 'redislock-rs-quorum'
const RS_QUORUM_TOKIO = 'redislock-rs-quorum-tokio'
const REDLOCK_QUORUM = 'redlock-quorum'
const RS_CLUSTER = 'redislock-rs-cluster'
const RS_REDLOCK = 'redislock-rs-redlock'
const RS_REDLOCK_TOKIO = 'redislock-rs-redlock-tokio'
/** The node-redlock face's engines, in the order they are checked. */
const REDLOCK_FACE_OURS = [[RS_REDLOCK, 'JS-thread engine'], [RS_REDLOCK_TOKIO, 'tokio engine']]
/** Issue 20: cycles/s of redislock-rs/redlock ≥ factor × redlock 4.2.0's (REDLOCK_QUORUM), per worker count; judged on the JS-thread engine (tokio informational). */
const REDLOCK_FACE_TARGETS = { 1: 1, 16: 2, 128: 2 }
/** The redis-semaphore face's lock kinds, as the harness (contenders.js semaphoreOn) and the report name them. */
const SEMAPHORE_FACE_KINDS = [['mutex', 'Mutex'], ['semaphore', 'Semaphore']]
const semOurs = (kind) => `redislock-rs-semaphore-${kind}`
const semOursTokio = (kind) => `redislock-rs-semaphore-${kind}-tokio`
const semPeer = (kind) => `redis-semaphore-${kind}`
/** The face's JS-thread-engine contenders (always run, whatever BENCH_ONLY says). */
const SEMAPHORE_FACE_RS = SEMAPHORE_FACE_KINDS.map(([kind]) => semOurs(kind))
/** cycles/s of redislock-rs/semaphore ≥ factor × redis-semaphore 5.8.0's, per worker count, per kind; judged on the JS-thread engine (tokio informational). */
const SEMAPHORE_FACE_TARGETS = { 1: 1, 16: 2, 128: 2 }
/** The redisson-sync section's contenders of ours (always run, whatever BENCH_ONLY says) and the ids its report reads. */
const SYNC_RS = ['redisson-rs-rw', 'redisson-rs-rw-exclusive', 'redisson-rs-read', 'redisson-rs-write', 'redisson-rs-lock', 'redisson-rs-fair', 'redisson-rs-lock-handoff', 'redisson-rs-semaphore', 'redisson-rs-pes']
const SYNC_RW = 'redisson-rs-rw'
const SYNC_RW_EXCLUSIVE = 'redisson-rs-rw-exclusive'
const SYNC_LOCK = 'redisson-rs-lock'
const SYNC_FAIR = 'redisson-rs-fair'
const SYNC_LOCK_HANDOFF = 'redisson-rs-lock-handoff'
const SYNC_SEMAPHORE = 'redisson-rs-semaphore'
const SYNC_SEM_PEER = 'redis-semaphore-shared'
const SYNC_SEM_FACE = 'redislock-rs-semaphore-shared'
const SYNC_PES = 'redisson-rs-pes'
/** The cluster section's peers, in the order their ratios are given. */
const CLUSTER_PEERS = [['redlock-cluster', 'redlock'], ['redislock-cluster', 'redislock']]
/** The valkey section's contenders of ours (always run, whatever BENCH_ONLY says): the Lua-free path and the scripted one, on Valkey 9. */
const RS_VALKEY_LUAFREE = 'redislock-rs-valkey-luafree'
const RS_VALKEY_SCRIPTED = 'redislock-rs-valkey-scripted'
const VALKEY_RS = [RS_VALKEY_LUAFREE, RS_VALKEY_SCRIPTED]
/** On Valkey: the Lua-free path's server CPU per uncontended cycle ≤ factor × the scripted path's, per worker count. */
const VALKEY_CPU_TARGETS = { 1: 0.7, 16: 0.7 }
/** On Valkey: the Lua-free path's cycles/s ≥ `scripted` × the scripted path's and ≥ `js` × the best JS contender's, per worker count. */
const VALKEY_THROUGHPUT_TARGETS = { 128: { scripted: 1.2, js: 2.5 }, 512: { scripted: 1.2, js: 2.5 } }
/** The web-locks section's contenders of ours (always run, whatever BENCH_ONLY says): the LockManager's exclusive and shared requests. */
const WEB_LOCKS_EXCLUSIVE = 'redislock-rs-web-locks'
const WEB_LOCKS_SHARED = 'redislock-rs-web-locks-shared'
const WEB_LOCKS_RS = [WEB_LOCKS_EXCLUSIVE, WEB_LOCKS_SHARED]
/** wakeOnRelease's targets: handoff p50 and p99 (ms) at most. */
const WAKE_P50_MS = 1
const WAKE_P99_MS = 5
/** The JavaScript contenders "best JS" is taken over. */
const JS_IDS = contenders.ALL.filter((c) => c.js).map((c) => c.id)
/** cycles/s target: redislock-rs (JS-thread engine) ≥ factor × the best JS contender. */
const THROUGHPUT = { 1: 1.1, 16: 1.5, 128: 2, 512: 2 }

const fmtInt = (x) => Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a'
const fmt = (x, d = 2) => Number.isFinite(x) ? x.toFixed(d) : 'n/a'
const times = (x) => Number.isFinite(x) ? x.toFixed(2) + '×' : 'n/a'
const ratio = (a, b) => Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : NaN
const mib = (b) => (b / 1048576).toFixed(1)
const workersLabel = (c) => `${c} worker${Number(c) === 1 ? '' : 's'}`

function labelOf (id) {
  if (id === C_LIMIT) return 'C limit: redis-benchmark -c 1 -P <workers>'
  return contenders.byId[id] ? contenders.byId[id].label : id
}
const nameOf = (id) => id === RS || id === REDISSON_RS || id === RS_WAKE || id === RS_QUORUM || id === RS_CLUSTER || id === RS_REDLOCK || SEMAPHORE_FACE_RS.includes(id) || SYNC_RS.includes(id) || VALKEY_RS.includes(id) || WEB_LOCKS_RS.includes(id) ? `**${labelOf(id)}**` : labelOf(id)

/** [id, summary] of the JavaScript contender with the most cycles/s in `sc`, or []. */
function bestJs (sc) {
  return JS_IDS.filter((id) => sc[id]).map((id) => [id, sc[id]])
    .sort((a, b) => b[1].cyclesPerSec - a[1].cyclesPerSec)[0] || []
}

function cmdBreakdown (cmds) {
  return Object.entries(cmds || {}).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')
}

// ---------------------------------------------------------------- targets

const check = (name, pass, detail) => ({ name, status: pass === null ? 'n/a' : pass ? 'PASS' : 'MISS', detail })

/** The cycles/s and p50 targets for the uncontended scenarios `unc` ({workers: scenario}). */
function ratioTargets (unc, where) {
  const out = []
  for (const c of Object.keys(unc).map(Number)) {
    const sc = unc[c]
    const [bid, b] = bestJs(sc)
    const want = THROUGHPUT[c]
    if (!want) continue
    if (!sc[RS] || !b) { out.push(check(`${where}${workersLabel(c)}: cycles/s ≥ ${want}× the best JS contender`, null, 'not measured')); continue }
    const x = ratio(sc[RS].cyclesPerSec, b.cyclesPerSec)
    const tokio = sc[RS_TOKIO] ? `; tokio engine ${times(ratio(sc[RS_TOKIO].cyclesPerSec, b.cyclesPerSec))}` : ''
    out.push(check(`${where}${workersLabel(c)}: cycles/s ≥ ${want}× the best JS contender`, x >= want,
      `${times(x)} ${bid} (${fmtInt(sc[RS].cyclesPerSec)} vs ${fmtInt(b.cyclesPerSec)} cycles/s)${tokio}`))
  }
  const s1 = unc[1]
  if (s1) {
    const x = s1[RS] && s1[FLOOR] ? ratio(s1[RS].p50, s1[FLOOR].p50) : NaN
    const tokio = s1[RS_TOKIO] && s1[FLOOR] ? `; tokio engine ${fmt(s1[RS_TOKIO].p50, 3)} ms = ${times(ratio(s1[RS_TOKIO].p50, s1[FLOOR].p50))}` : ''
    out.push(check(`${where}1 worker: latency p50 ≤ 0.9× the JS floor's`, Number.isFinite(x) ? x <= 0.9 : null,
      Number.isFinite(x) ? `${fmt(s1[RS].p50, 3)} vs ${fmt(s1[FLOOR].p50, 3)} ms = ${times(x)}${tokio}` : 'not measured'))
  }
  return out
}

/** Issue 9's targets, in order. */
function targets (R) {
  const L = R.local
  const out = ratioTargets(L.uncontended, '')
  const s = L.uncontended[128]
  for (const [field, want, what] of [['procCpuUs', 0.35, 'process CPU'], ['jsCpuUs', 0.3, 'JS-thread CPU']]) {
    const name = `128 workers: ${what} per cycle ≤ ${want}× the JS floor's`
    if (!s || !s[RS] || !s[FLOOR]) { out.push(check(name, null, 'not measured')); continue }
    const x = ratio(s[RS][field], s[FLOOR][field])
    const tokio = s[RS_TOKIO] ? `; tokio engine ${fmt(s[RS_TOKIO][field], 1)} µs = ${times(ratio(s[RS_TOKIO][field], s[FLOOR][field]))}` : ''
    out.push(check(name, x <= want, `${fmt(s[RS][field], 1)} vs ${fmt(s[FLOOR][field], 1)} µs = ${times(x)}${tokio}`))
  }
  {
    const ids = [RS, RS_TOKIO].filter((id) => L.audit[id])
    const ok = (a) => Math.abs(a.sentPerCycle - 2) < 0.005 && Math.abs((a.sent.SET || 0) - 1) < 0.005 && Math.abs((a.sent.EVALSHA || 0) - 1) < 0.005
    out.push(check('Exactly 2 Redis commands per uncontended cycle (SET + EVALSHA), both engines', ids.length ? ids.every((id) => ok(L.audit[id])) : null,
      ids.length ? ids.map((id) => `${id}: ${fmt(L.audit[id].sentPerCycle, 3)} (${cmdBreakdown(L.audit[id].sent)})`).join('; ') : 'not measured'))
  }
  {
    const t = R.threads[RS]
    const tokio = R.threads[RS_TOKIO] ? `; tokio engine, for comparison: ${[...new Set(R.threads[RS_TOKIO].seen)].join(', ') || 'none'}` : ''
    out.push(check('No thread of ours in a JS-thread-engine process that holds no lock (no /proc/self/task/*/comm starting with "redislock-rs")',
      t && t.checked ? t.seen.length === 0 : null,
      t && t.checked ? `${t.checked} children checked after their last release; seen: ${t.seen.join(', ') || 'none'}${tokio}` : 'not measured'))
  }
  return out
}

/** Checks from earlier issues, kept: flat memory and contention vs redislock. */
function otherChecks (R, contentionDelays) {
  const out = []
  const m = (R.local.memory || []).find((x) => x.id === RS)
  if (m && !m.error) {
    const dh = m.points[2].heapUsed - m.points[0].heapUsed
    const dr = m.points[2].rss - m.points[0].rss
    const dr2 = m.points[2].rss - m.points[1].rss
    out.push(check('Flat memory after warm-up (Δheap < 1 MiB, ΔRSS < 8 MiB, second half ΔRSS < 2 MiB)', dh < 1048576 && dr < 8 * 1048576 && dr2 < 2 * 1048576,
      `Δheap ${mib(dh)} MiB, ΔRSS ${mib(dr)} MiB (second half ${mib(dr2)} MiB) over ${fmtInt(m.total)} cycles`))
  } else if (m) {
    out.push(check('Flat memory after warm-up', false, m.error))
  }
  for (const d of contentionDelays) {
    const sc = R.local.contention[d]
    if (!sc || !sc[RS] || !sc.redislock) continue
    const x = ratio(sc[RS].cyclesPerSec, sc.redislock.cyclesPerSec)
    out.push(check(`Contention, retry delay ${d} ms: ≥ 0.95× redislock's critical sections/s`, x >= 0.95,
      `${times(x)} (${fmtInt(sc[RS].cyclesPerSec)} vs ${fmtInt(sc.redislock.cyclesPerSec)})`))
  }
  return out
}

/**
 * The Redisson face: redislock-rs/redisson beats node-redisson, per row
 * (more cycles/s; lower handoff p50 and p99). Not among issue 9's targets.
 */
function redissonChecks (Rr) {
  if (!Rr) return []
  const out = []
  const name = (what) => `redislock-rs/redisson beats node-redisson: ${what}`
  for (const [c, sc] of Object.entries(Rr.uncontended || {})) {
    const a = sc[REDISSON_RS]
    const b = sc[NODE_REDISSON]
    const what = `uncontended, ${workersLabel(c)}, cycles/s`
    if (!a || !b) { out.push(check(name(what), null, 'not measured')); continue }
    out.push(check(name(what), a.cyclesPerSec > b.cyclesPerSec,
      `${times(ratio(a.cyclesPerSec, b.cyclesPerSec))} (${fmtInt(a.cyclesPerSec)} vs ${fmtInt(b.cyclesPerSec)} cycles/s)`))
  }
  const h = Rr.handoff || {}
  for (const [field, label] of [['p50', 'handoff p50'], ['p99', 'handoff p99']]) {
    const a = h[REDISSON_RS]
    const b = h[NODE_REDISSON]
    if (!a || !b) { out.push(check(name(label), null, 'not measured')); continue }
    out.push(check(name(label), a[field] < b[field],
      `${fmt(a[field], 3)} vs ${fmt(b[field], 3)} ms = ${times(ratio(a[field], b[field]))} (${fmtInt(a.handoffs)} vs ${fmtInt(b.handoffs)} handoffs)`))
  }
  return out
}

/**
 * Wake on release (redislock face): redislock-rs with wakeOnRelease hands the
 * lock off within WAKE_P50_MS / WAKE_P99_MS, and faster (p50) than every
 * JavaScript peer polling every 50 ms. Not among issue 9's targets.
 */
function wakeChecks (Rw, stallMs) {
  if (!Rw) return []
  const a = Rw[RS_WAKE]
  const out = []
  for (const [field, want] of [['p50', WAKE_P50_MS], ['p99', WAKE_P99_MS]]) {
    const name = `wakeOnRelease handoff ${field} ≤ ${want} ms`
    if (!a || !a.handoffs) { out.push(check(name, null, 'not measured')); continue }
    out.push(check(name, a[field] <= want, `${fmt(a[field], 3)} ms over ${fmtInt(a.handoffs)} handoffs (${fmt(100 * a.sameWorker, 1)} % of acquisitions by late arrivals, not counted; ` +
      `to another worker: ${field} ${fmt(a[field === 'p50' ? 'otherP50' : 'otherP99'], 3)} ms); max ${fmt(a.maxGap, 1)} ms, ${a.stalls + a.openStalls} stall(s) > ${stallMs} ms`))
  }
  const peers = JS_IDS.filter((id) => Rw[id] && Rw[id].handoffs)
  const name = 'wakeOnRelease p50 beats every peer\'s p50'
  if (!a || !a.handoffs || !peers.length) {
    out.push(check(name, null, 'not measured'))
  } else {
    const plain = Rw[RS] && Rw[RS].handoffs ? `; redislock-rs without wakeOnRelease ${fmt(Rw[RS].p50, 3)} ms` : ''
    out.push(check(name, peers.every((id) => a.p50 < Rw[id].p50),
      `${fmt(a.p50, 3)} ms vs ${peers.map((id) => `${id} ${fmt(Rw[id].p50, 3)} ms (${fmt(100 * Rw[id].sameWorker, 1)} % late arrivals)`).join(', ')}${plain}`))
  }
  return out
}

/**
 * Redlock on 3 servers: redislock-rs's Redlock (JS-thread engine) has more
 * cycles/s than node-redlock at every worker count in `workers`. Not among
 * issue 9's targets.
 */
function quorumChecks (Rq, workers) {
  if (!Rq) return []
  const n = Rq.servers.length
  const out = []
  for (const c of workers) {
    const sc = Rq.uncontended[c] || {}
    const a = sc[RS_QUORUM]
    const b = sc[REDLOCK_QUORUM]
    const name = `redislock-rs Redlock beats node-redlock on ${n} servers: cycles/s at ${workersLabel(c)}`
    if (!a || !b) { out.push(check(name, null, 'not measured')); continue }
    const tokio = sc[RS_QUORUM_TOKIO] ? `; tokio engine ${times(ratio(sc[RS_QUORUM_TOKIO].cyclesPerSec, b.cyclesPerSec))} (${fmtInt(sc[RS_QUORUM_TOKIO].cyclesPerSec)})` : ''
    out.push(check(name, a.cyclesPerSec > b.cyclesPerSec,
      `${times(ratio(a.cyclesPerSec, b.cyclesPerSec))} (${fmtInt(a.cyclesPerSec)} vs ${fmtInt(b.cyclesPerSec)} cycles/s; p50 ${fmt(a.p50, 3)} vs ${fmt(b.p50, 3)} ms)${tokio}`))
  }
  return out
}

const serversLabel = (n) => `${n} server${n === 1 ? '' : 's'}`

/** A face check's aside on the tokio engine (informational): its ratio to `peer`, or nothing when not measured. */
function tokioAside (t, peer, more = '') {
  return t ? `; tokio engine ${times(ratio(t.cyclesPerSec, peer.cyclesPerSec))} (${fmtInt(t.cyclesPerSec)} cycles/s${more}; informational)` : ''
}

/**
 * The node-redlock face (issue 20's targets): per topology (1 server, 3
 * servers) and worker count, redislock-rs/redlock's cycles/s on the
 * JS-thread engine (the default) ≥ REDLOCK_FACE_TARGETS[workers] × redlock
 * 4.2.0's in the same run; the tokio engine's ratio in the detail
 * (informational), as for the redis-semaphore face.
 */
function redlockFaceChecks (Rf) {
  if (!Rf) return []
  const out = []
  for (const topo of Rf) {
    const n = topo.servers.length
    for (const [c, want] of Object.entries(REDLOCK_FACE_TARGETS)) {
      const sc = topo.uncontended[c] || {}
      const a = sc[RS_REDLOCK]
      const b = sc[REDLOCK_QUORUM]
      const name = `redislock-rs/redlock ≥ ${want}× redlock's cycles/s, ${serversLabel(n)}, ${workersLabel(c)}, JS-thread engine`
      if (!a || !b) { out.push(check(name, null, 'not measured')); continue }
      const x = ratio(a.cyclesPerSec, b.cyclesPerSec)
      out.push(check(name, x >= want, `${times(x)} (${fmtInt(a.cyclesPerSec)} vs ${fmtInt(b.cyclesPerSec)} cycles/s; p50 ${fmt(a.p50, 3)} vs ${fmt(b.p50, 3)} ms)${tokioAside(sc[RS_REDLOCK_TOKIO], b)}`))
    }
  }
  return out
}

/** The node-redlock face under contention: one line per topology and retry delay, ours ÷ redlock (informational, no target). */
function redlockFaceContention (Rf) {
  if (!Rf) return []
  const out = []
  for (const topo of Rf) {
    for (const [d, sc] of Object.entries(topo.contention || {})) {
      const b = sc[REDLOCK_QUORUM]
      const ours = REDLOCK_FACE_OURS.filter(([id]) => sc[id])
        .map(([id, engine]) => `${engine} ${b ? times(ratio(sc[id].cyclesPerSec, b.cyclesPerSec)) : 'n/a'} (${fmtInt(sc[id].cyclesPerSec)})`)
      out.push(`contention, ${serversLabel(topo.servers.length)}, retry delay ${d} ms, critical sections/s: redlock ${b ? fmtInt(b.cyclesPerSec) : 'n/a'}; ${ours.join(', ') || 'ours not measured'} (informational, no target)`)
    }
  }
  return out
}

/**
 * The redis-semaphore face: per lock kind and worker count, redislock-rs/semaphore's
 * cycles/s (JS-thread engine, the default) ≥ SEMAPHORE_FACE_TARGETS[workers]
 * × redis-semaphore 5.8.0's in the same run; the tokio engine's ratio and
 * both sides' CPU per cycle in the detail (informational).
 */
function semaphoreFaceChecks (Rs) {
  if (!Rs) return []
  const out = []
  const cpu = (s) => `${fmt(s.procCpuUs, 1)} / ${fmt(s.jsCpuUs, 1)}`
  for (const [kind, Kind] of SEMAPHORE_FACE_KINDS) {
    const unc = Rs.uncontended[kind]
    if (!unc) continue
    for (const [c, want] of Object.entries(SEMAPHORE_FACE_TARGETS)) {
      const sc = unc[c] || {}
      const a = sc[semOurs(kind)]
      const b = sc[semPeer(kind)]
      const name = `redislock-rs/semaphore ${Kind} ≥ ${want}× redis-semaphore's cycles/s, ${workersLabel(c)}, JS-thread engine`
      if (!a || !b) { out.push(check(name, null, 'not measured')); continue }
      const x = ratio(a.cyclesPerSec, b.cyclesPerSec)
      const t = sc[semOursTokio(kind)]
      out.push(check(name, x >= want,
        `${times(x)} (${fmtInt(a.cyclesPerSec)} vs ${fmtInt(b.cyclesPerSec)} cycles/s; p50 ${fmt(a.p50, 3)} vs ${fmt(b.p50, 3)} ms; ` +
        `process / JS-thread CPU µs/cycle ${cpu(a)} vs ${cpu(b)})${tokioAside(t, b, t && `, CPU ${cpu(t)} µs`)}`))
    }
  }
  return out
}

/** The redis-semaphore face's Mutex under contention: one line per retry interval, ours ÷ redis-semaphore (informational, no target). */
function semaphoreFaceContention (Rs) {
  if (!Rs) return []
  const out = []
  for (const [d, sc] of Object.entries(Rs.contention || {})) {
    const b = sc[semPeer('mutex')]
    const ours = [[semOurs('mutex'), 'JS-thread engine'], [semOursTokio('mutex'), 'tokio engine']].filter(([id]) => sc[id])
      .map(([id, engine]) => `${engine} ${b ? times(ratio(sc[id].cyclesPerSec, b.cyclesPerSec)) : 'n/a'} (${fmtInt(sc[id].cyclesPerSec)})`)
    out.push(`Mutex contention, retryInterval ${d} ms, critical sections/s: redis-semaphore ${b ? fmtInt(b.cyclesPerSec) : 'n/a'}; ${ours.join(', ') || 'ours not measured'} (informational, no target)`)
  }
  return out
}

/** The README's rows for the redis-semaphore face: per kind, ours (JS-thread / tokio) ÷ redis-semaphore at each worker count. */
function semaphoreFaceReadmeRows (Rs) {
  const out = []
  for (const [kind, Kind] of SEMAPHORE_FACE_KINDS) {
    const unc = Rs.uncontended[kind]
    if (!unc) continue
    const cells = Object.entries(unc).map(([c, sc]) => {
      const b = sc[semPeer(kind)]
      const r = (id) => sc[id] && b ? times(ratio(sc[id].cyclesPerSec, b.cyclesPerSec)) : 'n/a'
      const want = SEMAPHORE_FACE_TARGETS[c]
      const a = sc[semOurs(kind)]
      const miss = want && a && b && ratio(a.cyclesPerSec, b.cyclesPerSec) < want
      return `${miss ? '**' : ''}${r(semOurs(kind))}${miss ? '**' : ''} / ${r(semOursTokio(kind))}`
    })
    out.push(`| ${Kind} | ${cells.join(' | ')} |`)
  }
  return out
}

/**
 * Valkey 9 (the valkey section, issue 35), uncontended, same-run ratios:
 * first that each of ours took the path it is named after (INFO
 * commandstats per cycle: the Lua-free one DELIFEQ and no script, the
 * scripted one EVALSHA and no DELIFEQ), at every worker count measured;
 * then the Lua-free path's server CPU per cycle ≤ VALKEY_CPU_TARGETS ×
 * the scripted path's, and its cycles/s ≥ VALKEY_THROUGHPUT_TARGETS × the
 * scripted path's and × the best JS contender's (which runs Lua on Valkey
 * too). [] when the section did not run or was skipped.
 */
function valkeyChecks (Rv) {
  if (!Rv || !Rv.available) return []
  const out = []
  const unc = Rv.uncontended || {}
  {
    const one = (x) => Math.abs(x - 1) < 0.005
    const per = (s, cmd) => (s.commands || {})[cmd] || 0
    const scripts = (s) => per(s, 'evalsha') + per(s, 'eval')
    const name = 'Each of ours took its path on Valkey (cmdstat per cycle): Lua-free DELIFEQ 1 and no script, scripted EVALSHA 1 and no DELIFEQ'
    const ws = Object.keys(unc).filter((c) => unc[c][RS_VALKEY_LUAFREE] && unc[c][RS_VALKEY_SCRIPTED])
    const bad = ws.filter((c) => {
      const a = unc[c][RS_VALKEY_LUAFREE]
      const b = unc[c][RS_VALKEY_SCRIPTED]
      return !(one(per(a, 'delifeq')) && scripts(a) === 0 && one(per(b, 'evalsha')) && per(b, 'delifeq') === 0)
    })
    const col = (id, f) => ws.map((c) => fmt(f(unc[c][id]))).join(' / ')
    out.push(check(name, ws.length ? bad.length === 0 : null, ws.length
      ? `at ${ws.join(' / ')} workers: Lua-free DELIFEQ ${col(RS_VALKEY_LUAFREE, (s) => per(s, 'delifeq'))}, EVALSHA + EVAL ${col(RS_VALKEY_LUAFREE, scripts)}; ` +
        `scripted EVALSHA ${col(RS_VALKEY_SCRIPTED, (s) => per(s, 'evalsha'))}, DELIFEQ ${col(RS_VALKEY_SCRIPTED, (s) => per(s, 'delifeq'))}` +
        `${bad.length ? `; WRONG PATH at ${bad.join(', ')} workers` : ''}`
      : 'not measured'))
  }
  for (const [c, want] of Object.entries(VALKEY_CPU_TARGETS)) {
    const sc = unc[c] || {}
    const a = sc[RS_VALKEY_LUAFREE]
    const b = sc[RS_VALKEY_SCRIPTED]
    const name = `Valkey, ${workersLabel(c)}: server CPU per uncontended cycle, Lua-free ≤ ${want}× scripted`
    if (!a || !b || !Number.isFinite(a.serverCpuUs) || !Number.isFinite(b.serverCpuUs)) { out.push(check(name, null, 'not measured')); continue }
    const x = ratio(a.serverCpuUs, b.serverCpuUs)
    out.push(check(name, x <= want, `${fmt(a.serverCpuUs, 2)} vs ${fmt(b.serverCpuUs, 2)} µs = ${times(x)} (at ${fmtInt(a.cyclesPerSec)} vs ${fmtInt(b.cyclesPerSec)} cycles/s)`))
  }
  for (const [c, want] of Object.entries(VALKEY_THROUGHPUT_TARGETS)) {
    const sc = unc[c] || {}
    const a = sc[RS_VALKEY_LUAFREE]
    const b = sc[RS_VALKEY_SCRIPTED]
    const name = `Valkey, ${workersLabel(c)}: cycles/s, Lua-free ≥ ${want.scripted}× scripted`
    if (!a || !b) {
      out.push(check(name, null, 'not measured'))
    } else {
      const x = ratio(a.cyclesPerSec, b.cyclesPerSec)
      out.push(check(name, x >= want.scripted, `${times(x)} (${fmtInt(a.cyclesPerSec)} vs ${fmtInt(b.cyclesPerSec)} cycles/s; p50 ${fmt(a.p50, 3)} vs ${fmt(b.p50, 3)} ms)`))
    }
    const [bid, best] = bestJs(sc)
    const jname = `Valkey, ${workersLabel(c)}: cycles/s, Lua-free ≥ ${want.js}× the best JS contender`
    if (!a || !best) {
      out.push(check(jname, null, 'not measured'))
    } else {
      const x = ratio(a.cyclesPerSec, best.cyclesPerSec)
      const scripted = b ? `; scripted ${times(ratio(b.cyclesPerSec, best.cyclesPerSec))}` : ''
      out.push(check(jname, x >= want.js, `${times(x)} ${bid} (${fmtInt(a.cyclesPerSec)} vs ${fmtInt(best.cyclesPerSec)} cycles/s)${scripted}`))
    }
  }
  return out
}

module.exports = {
  RS,
  RS_TOKIO,
  FLOOR,
  C_LIMIT,
  REDISSON_RS,
  NODE_REDISSON,
  RS_WAKE,
  RS_QUORUM,
  RS_QUORUM_TOKIO,
  REDLOCK_QUORUM,
  RS_CLUSTER,
  RS_REDLOCK,
  RS_REDLOCK_TOKIO,
  REDLOCK_FACE_OURS,
  REDLOCK_FACE_TARGETS,
  SEMAPHORE_FACE_KINDS,
  semOurs,
  semOursTokio,
  semPeer,
  SEMAPHORE_FACE_RS,
  SEMAPHORE_FACE_TARGETS,
  SYNC_RS,
  SYNC_RW,
  SYNC_RW_EXCLUSIVE,
  SYNC_LOCK,
  SYNC_FAIR,
  SYNC_LOCK_HANDOFF,
  SYNC_SEMAPHORE,
  SYNC_SEM_PEER,
  SYNC_SEM_FACE,
  SYNC_PES,
  CLUSTER_PEERS,
  RS_VALKEY_LUAFREE,
  RS_VALKEY_SCRIPTED,
  VALKEY_RS,
  VALKEY_CPU_TARGETS,
  VALKEY_THROUGHPUT_TARGETS,
  WEB_LOCKS_EXCLUSIVE,
  WEB_LOCKS_SHARED,
  WEB_LOCKS_RS,
  WAKE_P50_MS,
  WAKE_P99_MS,
  JS_IDS,
  THROUGHPUT,
  fmtInt,
  fmt,
  times,
  ratio,
  mib,
  workersLabel,
  labelOf,
  nameOf,
  bestJs,
  cmdBreakdown,
  check,
  ratioTargets,
  targets,
  otherChecks,
  redissonChecks,
  wakeChecks,
  quorumChecks,
  serversLabel,
  tokioAside,
  redlockFaceChecks,
  redlockFaceContention,
  semaphoreFaceChecks,
  semaphoreFaceContention,
  semaphoreFaceReadmeRows,
  valkeyChecks
}
