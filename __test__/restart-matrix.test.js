'use strict'

/**
 * Every face whose leases are renewed by the lease keeper, across Redis
 * restarts (issue 33): the redis-semaphore face (Mutex, Semaphore,
 * MultiSemaphore on one server; RedlockMutex, RedlockSemaphore,
 * RedlockMultiSemaphore on three), node-redlock 5's `using()` (one server
 * and three), the Redisson face's watchdog lock (`lock()` without a lease)
 * and the redislock face's `autoExtend` (one server and three). Each face
 * has redis-servers of its own (no persistence, except the one marked
 * AOF), and the faces run side by side.
 *
 * What is checked, each a property with generous bounds, never a race:
 *
 * - one server restarted, down ≥ 1 s (three lease periods):
 *   - a one-server holder from before is lost, and told (its face's
 *     lost-lock callback or signal) within its lease + MARGIN of the stop;
 *     nothing brings it back once the server returns;
 *   - a quorum holder from before (1 of 3 down: the quorum stays alive) is
 *     kept, never told lost; redis-semaphore's Redlock variants restore its
 *     members on the restarted server once it is back (as redis-semaphore's
 *     "should handle server shutdown if quorum is alive"); the node-redlock
 *     and redislock quorums keep it on the two that stayed up (their extend
 *     never re-creates a key); then it releases everywhere;
 * - two of three servers restarted, down ≥ 1 s: the quorum holder from
 *   before is lost and told within its lease + MARGIN; what it held on the
 *   server that stayed up is given back or expires;
 * - after each restart, holders taken on the same key (two for the
 *   semaphores with a limit of 2) keep their locks for HOLD lease periods:
 *   their key or members are on every server, with a TTL no longer than the
 *   lease (so renewals kept them), no lost-lock callback or signal fired
 *   for them and nothing was published on `redislock-rs:lost` for their key;
 * - one-server faces, a short restart (BLIP) of a server without
 *   persistence: the holder's key is gone with the server's data, and the
 *   holder is told lost within its lease + MARGIN of the server's return
 *   (never silently kept, never re-created);
 * - one-server faces, a short restart of a server with AOF persistence, the
 *   lease longer than the down time: the holder is kept (its renewals fail
 *   while the server is down and resume when it is back), never told lost;
 * - the issue's own reproduction, as reported (but for a longer
 *   acquireTimeout): a RedlockSemaphore holder with lockTimeout 300, two of
 *   three servers down for 1 s, flushall, two new holders: both on all
 *   three servers 600 ms later, none told lost.
 *
 * On the JS-thread engine before the fix (50ba3ba) the keeper's first
 * refresh after the restart was handed a stale "connection refused" and a
 * new holder was lost about 100–150 ms after it was taken: the issue's
 * reproduction and the 2-of-3 cases of RedlockMutex, RedlockSemaphore and
 * RedlockMultiSemaphore here failed that way, every run.
 *
 * Each case notes (t.diagnostic) how and when a lost holder was told, the
 * reason `redislock-rs:lost` gave, how a release of the lost holder ended,
 * and whether a quorum holder came back on the restarted server.
 *
 * The Redlock semaphore variants once gave a holder up after one refresh
 * round in which fewer than a quorum answered within their per-server
 * bound, with most of the lease left (on an overloaded machine, at any
 * point of a hold); now such a round is tried again while the lease runs
 * (semaphore-redlock.test.js checks it with slow servers).
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const dc = require('node:diagnostics_channel')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const IORedis = require('ioredis')
const S = require('../semaphore')
const Redlock5 = require('../redlock-v5').default
const { Redisson } = require('../redisson')
const { createLock } = require('..')
const { startRedis, admin } = require('./helpers/redis')
const { sleep, settle } = require('./helpers/wait')

/** The lease of every holder in the restart cases (ms). */
const L = 300
/** How long a restarted server stays down, at least (ms). */
const DOWN = 1000
/** How much later than its lease a loss may be told (ms): generous, for a loaded machine. */
const MARGIN = 2500
/** For how many lease periods a holder taken after a restart must keep its lock. */
const HOLD = 5
/** The lease in the persistence case, longer than its down time (ms). */
const PL = 1500
/** The down time of a short restart (ms). */
const BLIP = 150
/** A bound on any single call (acquire, release) in these tests (ms). */
const CALL = 10000

const servers = []
const clients = []
const checks = []
const redissons = []
const dirs = []
const lostEvents = []
const onLost = (m) => lostEvents.push({ face: m.face, keys: m.keys, reason: m.reason, at: Date.now() })
let seq = 0
const fresh = (what) => `rmx:${what}:${process.pid}:${seq++}`

function client (port) {
  const c = new IORedis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 50 })
  c.on('error', () => {})
  clients.push(c)
  return c
}

function checker (port) {
  const c = admin(port)
  c.on('error', () => {})
  checks.push(c)
  return c
}

/** `promise`'s value, failing the test if it is still pending after `limitMs`; its rejection rethrown. */
async function bounded (promise, what, limitMs = CALL) {
  const r = await settle(promise, limitMs, what)
  if (r.err) throw r.err
  return r.value
}

/** Polls `pred` (sync or async; a throw reads as false) until true or `limitMs` has passed: whether it became true. */
async function waitFor (pred, limitMs, stepMs = 20) {
  const until = Date.now() + limitMs
  for (;;) {
    let ok = false
    try { ok = await pred() } catch (_) { ok = false }
    if (ok) return true
    if (Date.now() >= until) return false
    await sleep(stepMs)
  }
}

// ---------------------------------------------------------------------------
// Holders: one shape for every face.
//   h.lost      null, or { how, err } of the first lost-lock callback/signal
//   h.on(c)     whether its lock is on the server of admin client c
//   h.pttl(c)   the PTTL of its key on that server
//   h.release() its face's release (v5: ends the routine, resolves with using()'s end)
// ---------------------------------------------------------------------------

function holder (key) {
  return {
    key,
    takenAt: 0,
    lost: null,
    lostAt: null,
    lose (how, err) {
      if (this.lost === null) {
        this.lost = { how, err }
        this.lostAt = Date.now()
      }
    }
  }
}

function watchSignal (h, signal, reasonOf = (s) => s.reason) {
  if (signal.aborted) h.lose('signal', reasonOf(signal))
  else signal.addEventListener('abort', () => h.lose('signal', reasonOf(signal)), { once: true })
}

/** A redis-semaphore face lock: `make(options)` builds it; `stored` 'mutex' or 'semaphore'; `permits` for a multi-semaphore. */
async function semaphoreHolder (key, lease, make, stored, permits = 0) {
  const h = holder(key)
  const lock = make({ lockTimeout: lease, acquireTimeout: 3000 + 2 * lease, retryInterval: 10, onLockLost: (err) => h.lose('onLockLost', err) })
  await bounded(lock.acquire(), `acquire ${key}`)
  h.takenAt = Date.now()
  watchSignal(h, lock.signal)
  const members = permits ? Array.from({ length: permits }, (_, i) => `${lock.identifier}_${i}`) : [lock.identifier]
  h.on = stored === 'mutex'
    ? async (c) => (await c.get(`mutex:${key}`)) === lock.identifier
    : async (c) => (await Promise.all(members.map((m) => c.zscore(`semaphore:${key}`, m)))).every((s) => s !== null)
  h.pttl = (c) => c.pttl(`${stored}:${key}`)
  h.release = () => lock.release()
  h.lock = lock
  return h
}

/** node-redlock 5's using(): the routine runs until h.release(). */
async function v5Holder (cs, key, lease) {
  const h = holder(key)
  const redlock = new Redlock5(cs, { retryCount: 100, retryDelay: 50, retryJitter: 10, automaticExtensionThreshold: 100 })
  let finish = null
  let inside
  const running = new Promise((resolve) => { inside = resolve })
  const done = redlock.using([key], lease, (signal, { lock }) => {
    h.value = lock.value
    watchSignal(h, signal, (s) => s.error)
    inside()
    return new Promise((resolve) => { finish = resolve })
  })
  done.catch(() => {})
  await bounded(Promise.race([running, done.then(() => { throw new Error('using() ended before its routine ran') })]), `using ${key}`)
  h.takenAt = Date.now()
  h.on = async (c) => (await c.get(key)) === h.value
  h.pttl = (c) => c.pttl(key)
  h.release = () => { finish(); return done }
  return h
}

/** The Redisson face: lock() with no lease, kept by the watchdog (lockWatchdogTimeout = lease). */
async function redissonHolder (port, key, lease) {
  const h = holder(key)
  const r = new Redisson({ redis: { options: { host: '127.0.0.1', port } }, lockWatchdogTimeout: lease })
  redissons.push(r)
  const clientId = `holder-${seq++}`
  const lock = r.getLock(key, clientId)
  await bounded(lock.lock(), `lock ${key}`)
  h.takenAt = Date.now()
  watchSignal(h, lock.signal)
  h.on = async (c) => Object.keys(await c.hgetall(key)).some((field) => field.endsWith(`:${clientId}`))
  h.pttl = (c) => c.pttl(key)
  h.release = () => lock.unlock()
  return h
}

/** The redislock face with autoExtend, on one server or a quorum. */
async function redislockHolder (target, key, lease) {
  const h = holder(key)
  const lock = createLock(target, { timeout: lease, autoExtend: true, retries: 300, delay: 20 })
  await bounded(lock.acquire(key), `acquire ${key}`)
  h.takenAt = Date.now()
  watchSignal(h, lock.signal)
  h.on = async (c) => (await c.get(key)) === lock._id
  h.pttl = (c) => c.pttl(key)
  h.release = () => lock.release()
  return h
}

// Every face that refreshes. `n` servers; `restores`: a quorum face whose
// refresh takes the lock again on a server that lost it; `after`: holders
// taken after a restart (a semaphore's limit).
const FACES = [
  { name: 'redis-semaphore Mutex (one server)', n: 1, take: (x, key, lease) => semaphoreHolder(key, lease, (o) => new S.Mutex(x.clients[0], key, o), 'mutex') },
  { name: 'redis-semaphore Semaphore, limit 2 (one server)', n: 1, after: 2, take: (x, key, lease) => semaphoreHolder(key, lease, (o) => new S.Semaphore(x.clients[0], key, 2, o), 'semaphore') },
  { name: 'redis-semaphore MultiSemaphore, 2 of 3 (one server)', n: 1, take: (x, key, lease) => semaphoreHolder(key, lease, (o) => new S.MultiSemaphore(x.clients[0], key, 3, 2, o), 'semaphore', 2) },
  { name: 'redis-semaphore RedlockMutex (three servers)', n: 3, restores: true, take: (x, key, lease) => semaphoreHolder(key, lease, (o) => new S.RedlockMutex(x.clients, key, o), 'mutex') },
  { name: 'redis-semaphore RedlockSemaphore, limit 2 (three servers)', n: 3, restores: true, after: 2, take: (x, key, lease) => semaphoreHolder(key, lease, (o) => new S.RedlockSemaphore(x.clients, key, 2, o), 'semaphore') },
  { name: 'redis-semaphore RedlockMultiSemaphore, 2 of 3 (three servers)', n: 3, restores: true, take: (x, key, lease) => semaphoreHolder(key, lease, (o) => new S.RedlockMultiSemaphore(x.clients, key, 3, 2, o), 'semaphore', 2) },
  { name: 'node-redlock 5 using() (one server)', n: 1, take: (x, key, lease) => v5Holder(x.clients, key, lease) },
  { name: 'node-redlock 5 using() (three servers)', n: 3, restores: false, take: (x, key, lease) => v5Holder(x.clients, key, lease) },
  { name: 'Redisson RLock lock() with the watchdog (one server)', n: 1, take: (x, key, lease) => redissonHolder(x.servers[0].port, key, lease) },
  { name: 'redislock createLock autoExtend (one server)', n: 1, take: (x, key, lease) => redislockHolder(x.clients[0], key, lease) },
  { name: 'redislock createLock autoExtend (three servers)', n: 3, restores: false, take: (x, key, lease) => redislockHolder(x.clients, key, lease) }
]

/** A face's servers, its clients on them (for the face) and admin clients (for looking). */
async function group (n, args) {
  const x = { servers: [], clients: [], checks: [] }
  for (let i = 0; i < n; i++) {
    const s = await startRedis(args ? { args: args() } : {})
    servers.push(s)
    x.servers.push(s)
    x.clients.push(client(s.port))
    x.checks.push(checker(s.port))
  }
  return x
}

const aofArgs = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'restart-matrix-'))
  dirs.push(dir)
  return ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir]
}

let issue = null

before(async () => {
  dc.subscribe('redislock-rs:lost', onLost)
  for (const face of FACES) {
    face.x = await group(face.n)
    if (face.n === 1) face.aof = await group(1, aofArgs)
  }
  issue = await group(3)
})

after(async () => {
  dc.unsubscribe('redislock-rs:lost', onLost)
  await Promise.allSettled(redissons.map((r) => r.quit()))
  for (const c of clients) c.disconnect()
  for (const c of checks) c.disconnect()
  for (const s of servers) await s.stop()
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})

/** Every server of `x` running (a failed case before may have left one stopped). */
async function allUp (x) {
  for (const s of x.servers) if (!s.pid) await s.start()
}

/** What a lost holder was told, for messages. */
const told = (h) => h.lost ? `${h.lost.how}: ${h.lost.err && (h.lost.err.reason || h.lost.err.message)}` : 'nothing'

/** For the test's diagnostics: how and when `h` was told, and what `redislock-rs:lost` said about its key. */
function toldNote (h, since, from) {
  const reasons = lostOn(h.key, h.takenAt).map((e) => `${e.face}/${e.reason}`).join(', ') || 'nothing'
  return `told ${h.lostAt - since} ms after ${from} (${told(h)}); redislock-rs:lost: ${reasons}`
}

/** For the test's diagnostics: how a call on a lost holder ended. */
const ended = (r) => r.err ? `rejected (${r.err.name}: ${String(r.err.message).split('\n')[0]})` : 'resolved'

/**
 * Events on `redislock-rs:lost` for `key` since `since` (the semaphore face
 * names its keys `mutex:<key>` / `semaphore:<key>`; a mere substring would
 * also match key `…:1` against `…:10`).
 */
const lostOn = (key, since) => lostEvents.filter((e) => e.at >= since && e.keys.some((k) => k === key || String(k).endsWith(`:${key}`)))

/** `h` still holds its lock on every server of `cs`, renewed (a TTL within the lease), and was told nothing. */
async function assertKept (h, cs, lease, what) {
  assert.equal(h.lost, null, `${what}: told lost (${told(h)}) ${h.lostAt - h.takenAt} ms after it was taken`)
  for (const [i, c] of cs.entries()) {
    assert.equal(await h.on(c), true, `${what}: on server ${i}`)
    const pttl = await h.pttl(c)
    assert.ok(pttl > 0 && pttl <= lease, `${what}: renewed to its lease on server ${i} (PTTL ${pttl})`)
  }
  assert.deepEqual(lostOn(h.key, h.takenAt), [], `${what}: nothing on redislock-rs:lost`)
}

/** Takes `count` holders on `key`, keeps them for HOLD lease periods, checks them on every server, releases them. */
async function takeAndKeep (face, x, key, count, what) {
  const hs = []
  for (let i = 0; i < count; i++) hs.push(await face.take(x, key, L))
  await sleep(HOLD * L)
  for (const [i, h] of hs.entries()) await assertKept(h, x.checks, L, `${what} (holder ${i + 1} of ${count}, after ${HOLD} leases)`)
  for (const h of hs) await bounded(h.release(), `release ${key}`)
  for (const [i, c] of x.checks.entries()) {
    for (const h of hs) assert.equal(await h.on(c), false, `${what}: released on server ${i}`)
  }
}

/** A holder from before a restart that must be lost: told within `bound` ms of `since` (the stop, or the return). */
async function assertTold (h, since, bound, what, from = 'the stop') {
  const ok = await waitFor(() => h.lost !== null, bound - (Date.now() - since))
  assert.ok(ok, `${what}: still not told lost ${Date.now() - since} ms after ${from} (lease ${L} ms)`)
  assert.ok(h.lostAt - since <= bound, `${what}: told ${h.lostAt - since} ms after ${from}, more than ${bound}`)
}


/** Every server of `face` up, a holder taken on a fresh key and seen kept for a lease: `{ key, old }`. */
async function heldBefore (face, what) {
  const x = face.x
  await allUp(x)
  const key = fresh(what)
  const old = await face.take(x, key, L)
  await sleep(L)
  await assertKept(old, x.checks, L, 'before the stop')
  return { key, old }
}
/** One server of a one-server face down ≥ DOWN: the holder is lost and told; one taken after keeps its lock. */
async function oneServerFaceRestart (t, face) {
  const x = face.x
  const { key, old } = await heldBefore(face, 'one-down')
  const t0 = Date.now()
  await x.servers[0].stop()
  try {
    await waitFor(() => old.lost !== null, L + MARGIN)
    await sleep(DOWN - (Date.now() - t0))
  } finally {
    await x.servers[0].start()
  }
  await assertTold(old, t0, L + MARGIN, 'the holder from before, its server down')
  t.diagnostic(toldNote(old, t0, 'the stop'))
  await sleep(L)
  assert.equal(await old.on(x.checks[0]), false, 'nothing brought the lost holder back')
  t.diagnostic(`release of the lost holder: ${ended(await settle(old.release(), CALL, 'release of the lost holder'))}`)
  await takeAndKeep(face, x, key, face.after || 1, 'a holder taken after the restart')
}

/** One of three servers down ≥ DOWN: the quorum holder is kept (restored there, for the semaphores), releases; one taken after keeps its lock. */
async function quorumFaceOneRestart (t, face) {
  const x = face.x
  const { key, old } = await heldBefore(face, 'one-of-three')
  await x.servers[0].stop()
  try {
    await sleep(DOWN)
    assert.equal(old.lost, null, `a quorum stayed up, yet the holder was told lost (${told(old)})`)
  } finally {
    await x.servers[0].start()
  }
  const back = Date.now()
  if (face.restores) {
    const restored = await waitFor(() => old.on(x.checks[0]), L + MARGIN)
    assert.ok(restored, 'the refresh restored the holder on the restarted server')
    t.diagnostic(`restored on the restarted server ${Date.now() - back} ms after its return`)
  }
  await sleep(3 * L)
  if (!face.restores) t.diagnostic(`on the restarted server ${3 * L} ms after its return: ${await old.on(x.checks[0])}`)
  const stayed = face.restores ? x.checks : x.checks.slice(1)
  await assertKept(old, stayed, L, `the holder from before, 1 of 3 restarted (${3 * L} ms after the return)`)
  await bounded(old.release(), `release ${key}`)
  for (const [i, c] of x.checks.entries()) assert.equal(await old.on(c), false, `released on server ${i}`)
  await takeAndKeep(face, x, key, face.after || 1, 'a holder taken after the restart')
}

/** Two of three servers down ≥ DOWN: the quorum holder is lost and told; holders taken after keep their locks. */
async function quorumFaceMajorityRestart (t, face) {
  const x = face.x
  const { key, old } = await heldBefore(face, 'two-of-three')
  const down = x.servers.slice(1)
  const t0 = Date.now()
  await Promise.all(down.map((s) => s.stop()))
  try {
    await waitFor(() => old.lost !== null, L + MARGIN)
    await sleep(DOWN - (Date.now() - t0))
  } finally {
    await Promise.all(down.map((s) => s.start()))
  }
  await assertTold(old, t0, L + MARGIN, 'the holder from before, 2 of 3 servers down')
  t.diagnostic(toldNote(old, t0, 'the stop'))
  const gone = await waitFor(async () => !(await old.on(x.checks[0])), L + MARGIN)
  assert.ok(gone, 'what the lost holder had on the server that stayed up was given back or expired')
  t.diagnostic(`release of the lost holder: ${ended(await settle(old.release(), CALL, 'release of the lost holder'))}`)
  await takeAndKeep(face, x, key, face.after || 1, 'holders taken after 2 of 3 servers restarted')
}

/** A one-server face, a short restart without persistence: the key is gone, the holder told. */
async function oneServerFaceBlip (t, face) {
  const x = face.x
  const { old } = await heldBefore(face, 'blip')
  await x.servers[0].stop()
  await sleep(BLIP)
  await x.servers[0].start()
  const back = Date.now()
  await assertTold(old, back, L + MARGIN, 'the holder whose key the restart forgot', 'the return')
  t.diagnostic(toldNote(old, back, 'the return'))
  assert.equal(await old.on(x.checks[0]), false, 'nothing re-created the forgotten lock')
  t.diagnostic(`release of the lost holder: ${ended(await settle(old.release(), CALL, 'release of the lost holder'))}`)
}

/** A one-server face on a server with AOF, restarted for less than the lease: the holder is kept. */
async function oneServerFacePersisted (t, face) {
  const x = face.aof
  await allUp(x)
  const key = fresh('aof')
  const h = await face.take(x, key, PL)
  await sleep(PL / 2)
  await x.servers[0].stop()
  await sleep(BLIP)
  await x.servers[0].start()
  // Past two leases after the return: had the renewals not resumed, the key
  // (its TTL at most PL at the stop) would be gone.
  await sleep(2 * PL)
  await assertKept(h, x.checks, PL, `kept across a ${BLIP} ms restart with AOF (lease ${PL} ms)`)
  await bounded(h.release(), `release ${key}`)
  assert.equal(await h.on(x.checks[0]), false, 'released')
}

/** The issue's reproduction, as reported. */
async function issue33 () {
  const x = issue
  await allUp(x)
  // The reported options, but for acquireTimeout: 100 ms there is a race
  // with reconnecting after the restart on a loaded machine, and the defect
  // was in the refresh, not the acquire.
  const opts = { lockTimeout: 300, acquireTimeout: 3000, refreshInterval: 80, retryInterval: 10 }
  let oldLost = null
  const old = new S.RedlockSemaphore(x.clients, 'rr', 2, { ...opts, onLockLost: (e) => { oldLost = e } })
  await bounded(old.acquire(), 'acquire before')
  await Promise.all(x.servers.slice(1).map((s) => s.stop()))
  try {
    await sleep(1000)
  } finally {
    await Promise.all(x.servers.slice(1).map((s) => s.start()))
  }
  assert.ok(oldLost instanceof S.LostLockError, 'the holder from before was lost while 2 of 3 were down')
  await bounded(old.release(), 'release of the lost holder')
  await Promise.all(x.checks.map((c) => c.flushall()))
  const lost = []
  const fresh2 = [0, 1].map(() => new S.RedlockSemaphore(x.clients, 'rr', 2, { ...opts, onLockLost: (e) => lost.push(e) }))
  for (const s of fresh2) await bounded(s.acquire(), 'acquire after')
  await sleep(600)
  const members = await Promise.all(x.checks.map((c) => c.zrange('semaphore:rr', 0, -1)))
  for (const [i, m] of members.entries()) {
    assert.deepEqual([...m].sort(), fresh2.map((s) => s.identifier).sort(), `both holders in semaphore:rr on server ${i}`)
  }
  assert.deepEqual(lost.map((e) => e.message), [], 'no onLockLost for the holders taken after the restart')
  for (const s of fresh2) await bounded(s.release(), 'release after')
}

test('holders across Redis restarts, every face that refreshes', { concurrency: true, timeout: 120000 }, async (t) => {
  const runs = FACES.map((face) => t.test(face.name, async (t) => {
    if (face.n === 1) {
      await t.test(`its server restarted, down ≥ ${DOWN} ms: the holder is lost and told; holders taken after keep their locks`, (t) => oneServerFaceRestart(t, face))
      await t.test(`a ${BLIP} ms restart without persistence: the holder is told lost, its lock not re-created`, (t) => oneServerFaceBlip(t, face))
      await t.test(`a ${BLIP} ms restart with AOF, lease ${PL} ms: the holder is kept`, (t) => oneServerFacePersisted(t, face))
    } else {
      await t.test(`1 of 3 restarted, down ≥ ${DOWN} ms: the holder is kept${face.restores ? ' and restored there' : ''}; holders taken after keep their locks`, (t) => quorumFaceOneRestart(t, face))
      await t.test(`2 of 3 restarted, down ≥ ${DOWN} ms: the holder is lost and told; holders taken after keep their locks`, (t) => quorumFaceMajorityRestart(t, face))
    }
  }))
  runs.push(t.test('issue 33 as reported: RedlockSemaphore holders taken after 2 of 3 servers restarted keep their permits', issue33))
  await Promise.all(runs)
})
