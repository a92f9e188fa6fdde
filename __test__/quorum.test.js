'use strict'

/**
 * Redlock: `createLock([a, b, c, d, e], options)` on five redis-servers
 * started here (and an observer server for the fleet test): majorities,
 * servers killed, paused and restarted, a slow majority that must not hand
 * out an expired lock, validity edge cases, and errors that say what every
 * server did.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const IORedis = require('ioredis')
const R = require('..')
const { startRedis, ask } = require('./helpers/redis')
const { startProxy } = require('./helpers/proxy')
const { sleep, block } = require('./helpers/wait')

const servers = []
const checks = []
let observer
let seq = 0
const fresh = (what) => `quorum:${what}:${process.pid}:${seq++}`
const opts = (port) => ({ host: '127.0.0.1', port, connectTimeout: 300, commandTimeout: 500 })
const all = () => servers.map((s) => opts(s.port))

before(async () => {
  for (let i = 0; i < 5; i++) servers.push(await startRedis({ args: ['--enable-debug-command', 'yes'] }))
  observer = await startRedis()
  for (const s of servers) {
    const c = new IORedis({ port: s.port, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 200 })
    c.on('error', () => {})
    await c.connect().catch(() => {})
    checks.push(c)
  }
})

after(async () => {
  for (const c of checks) c.disconnect()
  for (const s of servers) await s.stop()
  if (observer) await observer.stop()
})

/** The key's value on every server (null where absent or unreachable). */
async function onEvery (key) {
  return Promise.all(checks.map((c) => c.get(key).catch(() => null)))
}

test('five servers: the token lands on every server, release clears them, the API is redislock\'s', async () => {
  const key = fresh('basic')
  const lock = R.createLock(all(), { timeout: 5000 })
  assert.equal(lock._locked, false)
  await lock.acquire(key)
  assert.equal(lock._locked, true)
  assert.equal(lock._key, key)
  assert.deepEqual(await onEvery(key), Array(5).fill(lock._id))
  assert.ok(lock.validityMs() > 4800 && lock.validityMs() <= 5000 - 52, String(lock.validityMs()))
  assert.ok(R.getAcquiredLocks().includes(lock))
  const other = R.createLock(all(), { timeout: 5000 })
  const err = await other.acquire(key).catch((e) => e)
  assert.ok(err instanceof R.LockAcquisitionError)
  assert.match(err.message, /acquired on 0 of 5 servers, needed 3: 5 held by another owner/)
  assert.equal(err.servers.length, 5)
  assert.deepEqual(err.servers.map((s) => s.outcome), Array(5).fill('held'))
  assert.match(err.servers[0].server, /^127\.0\.0\.1:\d+\/0$/)
  await lock.extend(8000)
  assert.ok(lock.validityMs() > 7000)
  await new Promise((resolve, reject) => lock.release((e) => (e ? reject(e) : resolve())))
  assert.deepEqual(await onEvery(key), Array(5).fill(null))
  assert.equal(lock._locked, false)
  await assert.rejects(lock.release(), { name: 'LockReleaseError', message: 'Lock has not been acquired' })
  await assert.rejects(lock.extend(1.5), { name: 'LockExtendError', message: 'Int time is required to extend lock' })
})

test('2 of 5 servers killed: still locks; 3 killed: a clear, prompt failure; restarted: recovers', async () => {
  const key = fresh('kill')
  await servers[3].stop(true)
  await servers[4].stop(true)
  const lock = R.createLock(all(), { timeout: 3000 })
  await lock.acquire(key)
  await lock.release()
  await servers[2].stop(true)
  const t0 = Date.now()
  const err = await lock.acquire(key).catch((e) => e)
  const took = Date.now() - t0
  assert.ok(err instanceof R.LockAcquisitionError, String(err))
  assert.match(err.message, /acquired on 2 of 5 servers, needed 3: 2 acquired, /)
  assert.deepEqual(err.servers.slice(0, 2).map((s) => s.outcome), ['acquired', 'acquired'])
  // A dead server is refused at once (unreachable, with the error) or, while
  // a connect is still retrying, not answered within serverTimeout.
  for (const s of err.servers.slice(2)) {
    assert.ok(s.outcome === 'unreachable' || s.outcome === 'timeout', JSON.stringify(s))
    if (s.outcome === 'unreachable') assert.ok(typeof s.error === 'string' && s.error.length > 0)
  }
  assert.ok(took < 2000, `failed within ${took} ms`)
  assert.deepEqual((await onEvery(key)).slice(0, 2), [null, null], 'what the failed attempt took was given back')
  for (const i of [2, 3, 4]) await servers[i].start()
  // The check clients reconnect on their own (every 200 ms): wait until each
  // is back, so that a null below means the token is missing, not the client.
  for (const c of checks) {
    const t1 = Date.now()
    while (c.status !== 'ready') {
      assert.ok(Date.now() - t1 < 5000, `check client on ${c.options.port} did not reconnect`)
      await sleep(20)
    }
  }
  // The restarted servers need a fresh connection each: a serverTimeout of
  // its own (default here: 50 ms) bounds that connect too, so a loaded
  // machine could leave one out of a grant the majority still makes.
  const again = R.createLock(all(), { timeout: 3000, serverTimeout: 1000 })
  await again.acquire(key)
  assert.deepEqual(await onEvery(key), Array(5).fill(again._id))
  await again.release()
})

test('a majority that answers only after the TTL never yields an expired lock', async () => {
  // Three servers behind proxies that hold every reply 400 ms: a majority
  // confirms, but after the 300 ms lease has run out.
  const proxies = []
  try {
    for (const s of servers.slice(0, 3)) proxies.push(await startProxy(s.port))
    for (const p of proxies) p.delayReplies(400)
    const list = [...proxies.map((p) => ({ ...opts(p.port), commandTimeout: 2000 })), ...servers.slice(3).map((s) => opts(s.port))]
    const key = fresh('slow')
    const lock = R.createLock(list, { timeout: 300, serverTimeout: 1000 })
    const err = await lock.acquire(key).catch((e) => e)
    assert.ok(err instanceof R.LockAcquisitionError, `must not be granted: ${err}`)
    // Settled once a majority (the two direct servers, then a proxied one)
    // had it: proxied answers not in yet could not change the result (those
    // that came in the same turn are counted).
    const got = Number(/acquired on (\d) of 5 servers, but no validity was left/.exec(err.message)?.[1])
    assert.ok(got >= 3, err.message)
    const outcomes = err.servers.map((s) => s.outcome)
    assert.equal(outcomes.filter((o) => o === 'acquired').length, got)
    assert.equal(outcomes.filter((o) => o === 'unheard').length, 5 - got)
    assert.equal(lock._locked, false)
    await sleep(500)
    assert.deepEqual(await onEvery(key), Array(5).fill(null), 'released everywhere')
  } finally {
    for (const p of proxies) await p.close()
  }
})

test('validity edge cases: a TTL below drift + latency fails cleanly, 2^31 ms works', async () => {
  const tiny = R.createLock(all(), { timeout: 2 })
  const err = await tiny.acquire(fresh('tiny')).catch((e) => e)
  assert.ok(err instanceof R.LockAcquisitionError)
  assert.match(err.message, /no validity was left \(-?\d+ ms/)
  const huge = R.createLock(all(), { timeout: 2 ** 31 })
  const key = fresh('huge')
  await huge.acquire(key)
  const v = huge.validityMs()
  assert.ok(v > 2 ** 31 - 2 ** 31 / 100 - 1000 && v < 2 ** 31, String(v))
  const ttl = await checks[0].pttl(key)
  assert.ok(ttl > 2 ** 31 - 10000, String(ttl))
  await huge.release()
  assert.throws(() => R.createLock(all(), { serverTimeout: -1 }), RangeError)
  assert.throws(() => R.createLock([]), TypeError)
  assert.throws(() => R.createLock([opts(servers[0].port), opts(servers[0].port)]), /twice/)
  assert.throws(() => R.createLock(all(), { fencing: true }), /no fencing token/)
  await assert.rejects(R.createLock(all()).acquire(''), /Invalid lock key/)
})

test('a lost majority: extend fails, releases what it extended and clears the state; release reports the shortfall', async () => {
  const key = fresh('lost')
  const lock = R.createLock(all(), { timeout: 5000 })
  await lock.acquire(key)
  for (const c of checks.slice(0, 3)) await c.del(key)
  const err = await lock.extend(5000).catch((e) => e)
  assert.ok(err instanceof R.LockExtendError, String(err))
  assert.match(err.message, /extended on 2 of 5 servers, needed 3/)
  assert.deepEqual(err.servers.map((s) => s.outcome), ['not-ours', 'not-ours', 'not-ours', 'extended', 'extended'])
  assert.equal(lock._locked, false)
  assert.deepEqual(await onEvery(key), Array(5).fill(null), 'the two that extended were released')
  await lock.acquire(key)
  for (const c of checks.slice(0, 3)) await c.set(key, 'someone-else')
  const rel = await lock.release().catch((e) => e)
  assert.ok(rel instanceof R.LockReleaseError)
  assert.match(rel.message, /released on 2 of 5 servers, needed 3/)
  assert.equal(lock._locked, false)
  assert.deepEqual(await onEvery(key), ['someone-else', 'someone-else', 'someone-else', null, null])
  for (const c of checks.slice(0, 3)) await c.del(key)
})

test('autoExtend renews on a majority: through a blocked event loop and 2 paused servers, not past a lost majority', async () => {
  const key = fresh('keep')
  const lock = R.createLock(all(), { timeout: 600, autoExtend: true })
  await lock.acquire(key)
  const signal = lock.signal
  assert.ok(signal instanceof AbortSignal)
  // The event loop blocked for 4 leases: the keeper renews from the tokio thread.
  block(2400)
  assert.deepEqual(await onEvery(key), Array(5).fill(lock._id))
  assert.ok(lock.validityMs() > 0 && lock.validityMs() <= 600, String(lock.validityMs()))
  // Two servers asleep for 4 leases: the other three still renew it.
  const asleep = servers.slice(3).map((s) => ask(s.port, 'DEBUG', 'SLEEP', '2.4'))
  await sleep(2400)
  await Promise.all(asleep)
  const held = await onEvery(key)
  assert.deepEqual(held.slice(0, 3), Array(3).fill(lock._id), 'renewed on the three awake servers')
  assert.equal(signal.aborted, false)
  const other = R.createLock(all(), { timeout: 600 })
  // The sleepers' copies ran out meanwhile: the contender gets those two only.
  await assert.rejects(other.acquire(key), /acquired on 2 of 5 servers, needed 3: 3 held by another owner/)
  await lock.release()
  assert.deepEqual(await onEvery(key), Array(5).fill(null))
  assert.equal(signal.aborted, false, 'a release is not a loss')
  assert.equal(lock.validityMs(), 0)

  // The key deleted on 3 of 5: a majority cannot be reached; the loss is reported.
  await lock.acquire(key)
  const second = lock.signal
  assert.notEqual(second, signal)
  for (const c of checks.slice(0, 3)) await c.del(key)
  const t0 = Date.now()
  const reason = await new Promise((resolve) => second.addEventListener('abort', () => resolve(second.reason), { once: true }))
  assert.ok(reason instanceof R.LockLostError, String(reason))
  assert.equal(reason.reason, 'expired')
  assert.ok(Date.now() - t0 < 1500, `reported in ${Date.now() - t0} ms`)
  assert.equal(lock.validityMs(), 0)
  await assert.rejects(lock.release(), R.LockReleaseError)
  assert.equal(lock._locked, false)
})

test('autoExtend: a majority that stops answering loses the lock once its validity has run out (renewal-failed); extend keeps it kept', async () => {
  const key = fresh('keep-fail')
  const lock = R.createLock(all(), { timeout: 600, autoExtend: true })
  await lock.acquire(key)
  await lock.extend(900)
  assert.ok(lock.validityMs() > 600, String(lock.validityMs()))
  await sleep(1000)
  assert.deepEqual(await onEvery(key), Array(5).fill(lock._id), 'still kept after the extend, at its new lease')
  const signal = lock.signal
  const t0 = Date.now()
  const asleep = servers.slice(0, 3).map((s) => ask(s.port, 'DEBUG', 'SLEEP', '2'))
  const reason = await new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }))
  const took = Date.now() - t0
  await Promise.all(asleep)
  assert.equal(reason.reason, 'renewal-failed')
  // Not before the last confirmed validity ran out (≤ 900 ms), nor long after.
  assert.ok(took >= 400 && took < 1800, `lost after ${took} ms`)
  assert.equal(lock.validityMs(), 0)
  await lock.release().catch(() => {})
  await sleep(1000)
  assert.deepEqual(await onEvery(key), Array(5).fill(null))
  assert.throws(() => R.createLock(all(), { autoExtend: 'yes' }), TypeError)
  assert.throws(() => R.createLock(all(), { autoExtend: { maxHoldMs: -1 } }), RangeError)
})

test('wakeOnRelease: a Redlock waiter subscribes on every server and is woken by the release, not its delay', async () => {
  const key = fresh('wake')
  const channel = `{${key}}:redislock-rs:released`
  // The holder on other endpoints (another commandTimeout): its release
  // does not poke the waiter in-process; the word comes through Redis.
  const holder = R.createLock(servers.map((s) => ({ ...opts(s.port), commandTimeout: 600 })), { timeout: 20000, wakeOnRelease: true })
  const waiter = R.createLock(all(), { timeout: 20000, wakeOnRelease: true, retries: 5, delay: 10000 })
  await holder.acquire(key)
  const t0 = Date.now()
  const waiting = waiter.acquire(key)
  let subscribed = []
  for (let i = 0; i < 100; i++) {
    await sleep(20)
    subscribed = await Promise.all(checks.map(async (c) => (await c.pubsub('NUMSUB', channel))[1]))
    if (subscribed.every((n) => n === 1)) break
  }
  assert.deepEqual(subscribed, Array(5).fill(1), 'subscribed on every server')
  await holder.release()
  await waiting
  const took = Date.now() - t0
  assert.ok(took < 3000, `woken by the release, not the 10 s delay: ${took} ms`)
  // Woken by the first server's word, its attempt can reach a server before
  // the holder's delete does: a majority is what it needs and gets.
  const got = (await onEvery(key)).filter((v) => v === waiter._id).length
  assert.ok(got >= 3, `held on ${got} of 5`)
  // In-process: a release by the same endpoints pokes the waiter directly.
  const second = R.createLock(all(), { timeout: 20000, wakeOnRelease: true, retries: 5, delay: 10000 })
  const t1 = Date.now()
  const next = second.acquire(key)
  await sleep(200)
  await waiter.release()
  await next
  assert.ok(Date.now() - t1 < 3000, `woken in-process: ${Date.now() - t1} ms`)
  await second.release()
  assert.deepEqual(await onEvery(key), Array(5).fill(null))
  assert.throws(() => R.createLock(all(), { wakeOnRelease: 'yes' }), TypeError)
})

test('acquire(key, { signal }) on a quorum lock: an abort ends the wait at once; using() takes an array too', async () => {
  const key = fresh('abort')
  const holder = R.createLock(all(), { timeout: 20000 })
  await holder.acquire(key)
  const waiter = R.createLock(all(), { timeout: 20000, retries: -1, delay: 100, wakeOnRelease: true })
  const controller = new AbortController()
  const t0 = Date.now()
  const waiting = waiter.acquire(key, { signal: controller.signal }).catch((e) => e)
  await sleep(300)
  controller.abort(new Error('shutting down'))
  const err = await waiting
  assert.ok(Date.now() - t0 < 1000, `ended at once: ${Date.now() - t0} ms`)
  assert.ok(err instanceof R.LockAcquisitionError, String(err))
  assert.match(err.message, /was aborted/)
  assert.equal(err.cause.message, 'shutting down')
  assert.equal(waiter._locked, false)
  // The native wait is over too: after the holder leaves, nothing takes it.
  await holder.release()
  await sleep(400)
  assert.deepEqual(await onEvery(key), Array(5).fill(null))
  // Callback form, and an already aborted signal.
  const pre = await new Promise((resolve) => waiter.acquire(key, { signal: AbortSignal.abort() }, resolve))
  assert.match(String(pre && pre.message), /was aborted/)
  await assert.rejects(waiter.acquire(key, { signal: 'nope' }), /signal must be an AbortSignal/)
  // tryAcquire: one attempt; false only when others hold a blocking share.
  const one = R.createLock(all(), { timeout: 5000 })
  assert.equal(await one.tryAcquire(key), true)
  const two = R.createLock(all(), { timeout: 5000, retries: 5, delay: 3000 })
  const t1 = Date.now()
  assert.equal(await two.tryAcquire(key), false)
  assert.ok(Date.now() - t1 < 2000, 'one attempt, no retries (a retry waits 3 s)')
  await one[Symbol.asyncDispose]()
  assert.equal(one._locked, false)
  await one[Symbol.asyncDispose]() // not held: nothing to do
  // using() on several servers: autoExtend on a majority, released after.
  const value = await R.using(all(), key, { timeout: 600 }, async (signal) => {
    assert.equal(signal.aborted, false)
    await sleep(1000) // longer than the lease: renewed
    const held = await onEvery(key)
    assert.ok(held[0] !== null && held.every((v) => v === held[0]), `held everywhere by one token: ${held}`)
    return 'done'
  })
  assert.equal(value, 'done')
  assert.deepEqual(await onEvery(key), Array(5).fill(null))
})

test('3 processes × 4 workers on shared keys while servers are killed, paused and restarted: no overlap', async () => {
  const duration = 5000
  const ports = servers.map((s) => String(s.port))
  const runs = [0, 1, 2].map(() => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'quorum-worker.js'),
      String(observer.port), String(duration), ...ports], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`worker exited ${code}`))))
  }))
  // Faults: at most two servers out at once; a killed server comes back
  // only after the 1 s TTL has passed (a server that restarts empty at once
  // could grant a second majority: Redlock's delayed-restart rule).
  await sleep(600)
  await servers[0].stop(true)
  await sleep(400)
  await checks[1].call('DEBUG', 'SLEEP', '0.4').catch(() => {})
  await sleep(800)
  await servers[0].start()
  await servers[4].stop(true)
  await sleep(300)
  await checks[2].call('DEBUG', 'SLEEP', '0.3').catch(() => {})
  await sleep(1000)
  await servers[4].start()
  const results = await Promise.all(runs)
  const sections = results.reduce((a, r) => a + r.sections, 0)
  const overlaps = results.reduce((a, r) => a + r.overlaps, 0)
  assert.equal(overlaps, 0, JSON.stringify(results))
  assert.ok(sections > 50, `the fleet kept locking through the faults: ${JSON.stringify(results)}`)
})
