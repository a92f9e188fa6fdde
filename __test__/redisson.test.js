'use strict'

/**
 * The Redisson face against its oracle, node-redisson@1.0.4, on one real
 * redis-server: the same scenarios through both (results, errors and what
 * lands in Redis compared), both side by side on the same lock names
 * (exclusion, re-entrancy per owner, wake-ups across libraries), the
 * watchdog under a blocked event loop, and input node-redisson lets through.
 */

const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('child_process')
const path = require('path')
const IORedis = require('ioredis')
const NR = require('node-redisson')
const RS = require('../redisson')
const { useRedis } = require('./helpers/redis')
const { startProxy } = require('./helpers/proxy')
const { startMonitor } = require('./helpers/monitor')
const { sleep } = require('./helpers/wait')

const opened = []
// Registered before useRedis's own hook, so it runs before the server stops.
// node-redisson leaves a timer behind each wait (at most the lease, here
// ≤ 5 s) that later unsubscribes through its client: quitting it earlier
// would turn those into unhandled rejections, so wait them out first.
after(async () => {
  await sleep(5500)
  await Promise.allSettled(opened.map((r) => r.quit()))
})
const redis = useRedis()

function make (lib, extra = {}) {
  const r = new lib.Redisson({ redis: { options: { host: '127.0.0.1', port: redis.server.port } }, ...extra })
  opened.push(r)
  return r
}

let seq = 0
const fresh = (what) => `rs-test:${what}:${process.pid}:${seq++}`

/** What a failed promise rejected with, as comparable facts. */
async function outcome (p) {
  try {
    return { ok: await p }
  } catch (err) {
    return { error: err.constructor.name, message: String(err.message).split('\n')[0] }
  }
}

test('TimeUnit converts exactly as node-redisson, in bigints', () => {
  for (const unit of ['MILLISECONDS', 'SECONDS', 'MINUTES', 'HOURS', 'DAYS']) {
    for (const d of [0, 1, 7, 1500n, 86400001n]) {
      for (const f of ['toMillis', 'toSeconds', 'toHours', 'toDays']) {
        assert.equal(RS.TimeUnit[unit][f](d), NR.TimeUnit[unit][f](d), `${unit}.${f}(${d})`)
      }
    }
  }
  assert.equal(typeof RS.TimeUnit.now(), 'bigint')
  for (const bad of [NaN, 1.5, Infinity]) {
    assert.throws(() => NR.TimeUnit.SECONDS.toMillis(bad), RangeError)
    assert.throws(() => RS.TimeUnit.SECONDS.toMillis(bad), RangeError)
  }
})

test('an RLock\'s own fields are ones node-redisson\'s RLock has too; its other state is Symbol-keyed', () => {
  const name = fresh('fields')
  const ours = make(RS).getLock(name, 'owner-a')
  const theirs = make(NR).getLock(name, 'owner-a')
  assert.deepEqual(Object.keys(ours), ['_clientId'])
  assert.deepEqual(Object.getOwnPropertyNames(ours), ['_clientId'])
  for (const field of Object.keys(ours)) assert.equal(ours[field], theirs[field], field)
  assert.equal(ours.name, theirs.name)
  assert.equal(ours.clientId, theirs.clientId)
  assert.equal(ours.signal, null)
})

test('differential: the same calls give the same results, errors and Redis contents', async () => {
  const facts = {}
  for (const [label, lib] of [['node-redisson', NR], ['redislock-rs', RS]]) {
    const r = make(lib)
    const name = fresh(`diff-${label}`)
    const a = r.getLock(name, 'owner-a')
    const b = r.getLock(name, 'owner-b')
    const f = []
    f.push(await outcome(a.tryLock(0, 5000)))
    f.push(await outcome(a.tryLock(0, 5000))) // re-entry
    const hash = await redis.check.hgetall(name)
    const fields = Object.keys(hash)
    f.push({ fields: fields.length, count: Object.values(hash), shape: /^[0-9a-f-]{36}:owner-a$/.test(fields[0]) })
    const pttl = await redis.check.pttl(name)
    f.push({ pttlNear5s: pttl > 4000 && pttl <= 5000 })
    f.push(await outcome(b.tryLock(0, 5000))) // another owner: refused
    f.push(await outcome(b.unlock())) // not ours
    f.push(await outcome(a.isLocked()))
    f.push(await outcome(a.unlock()))
    f.push({ after1: Object.values(await redis.check.hgetall(name)) })
    f.push(await outcome(a.unlock()))
    f.push({ exists: await redis.check.exists(name) })
    f.push(await outcome(a.unlock())) // nothing left
    f.push(await outcome(a.isLocked()))
    f.push(await outcome(a.forceUnlock()))
    f.push(await outcome(b.tryLock(0, 3000)))
    f.push(await outcome(a.forceUnlock()))
    f.push({ exists: await redis.check.exists(name) })
    f.push({ clientId: a.clientId, name: a.name === name })
    facts[label] = f
  }
  assert.deepEqual(facts['redislock-rs'], facts['node-redisson'])
  // And the facts are the interesting ones, not two identical failures.
  assert.deepEqual(facts['redislock-rs'][0], { ok: true })
  assert.deepEqual(facts['redislock-rs'][2], { fields: 1, count: ['2'], shape: true })
  assert.equal(facts['redislock-rs'][5].message, 'attempt to unlock lock, not locked by current client')
})

test('a release is announced on the same channel, with the same message, as node-redisson', async () => {
  const sub = new IORedis({ port: redis.server.port })
  const seen = []
  sub.on('message', (channel, message) => seen.push([channel, message]))
  try {
    for (const [label, lib] of [['nr', NR], ['rs', RS]]) {
      const name = fresh(`chan-${label}`)
      await sub.subscribe(`redisson_lock__channel:{${name}}`)
      const l = make(lib).getLock(name)
      await l.tryLock(0, 5000)
      await l.unlock()
      const braced = `{${name}}:x`
      await sub.subscribe(`redisson_lock__channel:${braced}`)
      const l2 = make(lib).getLock(braced)
      await l2.tryLock(0, 5000)
      assert.equal(await l2.forceUnlock(), true)
    }
    await sleep(100)
    const shapes = seen.map(([c, m]) => [c.replace(/chan-(nr|rs)/, 'chan-L').replace(/:\d+:\d+/, ':N'), m])
    assert.equal(seen.length, 4)
    assert.deepEqual(shapes.slice(2), shapes.slice(0, 2))
    assert.ok(seen.every(([, m]) => m === '0'))
  } finally {
    sub.disconnect()
  }
})

test('streams adapter: the same stream entries as node-redisson, and a release by either wakes the other', async () => {
  const rs = make(RS, { eventAdapter: 'streams' })
  const name = fresh('streams')
  // node-redisson's streams reader cannot be closed: it runs in a child.
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'node-redisson-holder.js'),
    String(redis.server.port), name, 'streams', '20000'], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = []
  const line = () => new Promise((resolve) => {
    const take = () => { if (lines.length) resolve(lines.shift()); else child.stdout.once('data', (d) => { lines.push(...String(d).trim().split('\n')); take() }) }
    take()
  })
  try {
    assert.equal(await line(), 'held')
    assert.equal(await rs.getLock(name).tryLock(0, 5000), false)
    const started = Date.now()
    const waiting = rs.getLock(name).tryLock(10000, 5000)
    await sleep(200)
    child.stdin.write('go\n')
    assert.equal(await line(), 'unlocked')
    assert.equal(await waiting, true)
    const waited = Date.now() - started
    assert.ok(waited < 5000, `woken by the stream entry, not the 20 s lease: ${waited} ms`)
  } finally {
    child.kill()
  }
  const entries = await redis.check.xrange('redisson:events', '-', '+')
  assert.deepEqual(entries[entries.length - 1][1], [`redisson_lock__channel:{${name}}`, '0'])
  // Ours announces the same way.
  assert.equal(await rs.getLock(name).forceUnlock(), true)
  const after = await redis.check.xrange('redisson:events', '-', '+')
  assert.deepEqual(after[after.length - 1][1], [`redisson_lock__channel:{${name}}`, '0'])
})

test('mixed: node-redisson and redislock-rs exclude each other and wake each other', async () => {
  const nr = make(NR)
  const rs = make(RS)
  const name = fresh('mixed')
  // Wake-ups across libraries, both ways, well before the 20 s lease.
  for (const [holderLib, waiterLib] of [[nr, rs], [rs, nr]]) {
    const holder = holderLib.getLock(name)
    assert.equal(await holder.tryLock(0, 20000), true)
    assert.equal(await waiterLib.getLock(name).tryLock(0, 1000), false)
    const t0 = Date.now()
    const waiter = waiterLib.getLock(name)
    const got = waiter.tryLock(3000, 5000)
    await sleep(100)
    await holder.unlock()
    assert.equal(await got, true)
    assert.ok(Date.now() - t0 < 3000, `woken on release (${Date.now() - t0} ms)`)
    await waiter.unlock()
  }
  // A non-atomic read-modify-write under the lock, from both libraries.
  const counter = fresh('counter')
  await redis.check.set(counter, '0')
  const worker = async (lib) => {
    const lock = lib.getLock(name)
    for (let i = 0; i < 25; i++) {
      await lock.lock(5000)
      const v = Number(await redis.check.get(counter))
      await sleep(1)
      await redis.check.set(counter, String(v + 1))
      await lock.unlock()
    }
  }
  await Promise.all([worker(nr), worker(rs), worker(nr), worker(rs)])
  assert.equal(await redis.check.get(counter), '100')
})

test('re-entrancy is per owner: the same clientId re-enters, another does not', async () => {
  const rs = make(RS)
  const name = fresh('reenter')
  const one = rs.getLock(name, 'same')
  const again = rs.getLock(name, 'same')
  assert.equal(await one.tryLock(0, 5000), true)
  assert.equal(await again.tryLock(0, 5000), true)
  assert.equal(await rs.getLock(name, 'other').tryLock(0, 5000), false)
  assert.equal(await make(RS).getLock(name, 'same').tryLock(0, 5000), false, 'another instance, same clientId: another owner')
  await one.unlock()
  assert.equal(await again.isLocked(), true)
  await again.unlock()
  assert.equal(await one.isLocked(), false)
})

test('watchdog: a lock without lease survives a blocked event loop, and no renewal follows unlock', async () => {
  const rs = make(RS, { lockWatchdogTimeout: 1000n })
  const name = fresh('watchdog')
  const lock = rs.getLock(name)
  await lock.lock()
  const until = Date.now() + 3000
  while (Date.now() < until) {} // eslint-disable-line no-empty
  await sleep(2000)
  assert.equal(await lock.isLocked(), true, 'still held after 5 s with a 1 s lease')
  const pttl = await redis.check.pttl(name)
  assert.ok(pttl > 0 && pttl <= 1000, `lease renewed to the watchdog timeout: ${pttl}`)
  const mon = await startMonitor(redis.server.port)
  const seen = []
  mon.on((args) => { if (args.includes(name)) seen.push(args[0].toLowerCase()) })
  try {
    await lock.unlock()
    await sleep(1500)
  } finally {
    mon.close()
  }
  assert.equal(await redis.check.exists(name), 0)
  // MONITOR also lists the commands a script runs: the unlock is the
  // EVALSHA whose script runs hincrby; a renewal would be another EVALSHA
  // (with a pexpire inside). One may land before the unlock, none after.
  const unlockAt = seen.indexOf('hincrby')
  assert.ok(unlockAt > 0, `the unlock was seen: ${seen}`)
  const later = seen.slice(unlockAt + 1)
  assert.ok(later.includes('del'), `the unlock deleted the lock: ${seen}`)
  assert.ok(!later.some((c) => /^(eval|evalsha|pexpire)$/i.test(c)), `no renewal after the unlock: ${seen}`)
  // A number is accepted as lockWatchdogTimeout too.
  const byNumber = make(RS, { lockWatchdogTimeout: 1200 }).getLock(fresh('watchdog-number'))
  await byNumber.lock()
  await sleep(1500)
  assert.equal(await byNumber.isLocked(), true)
  await byNumber.unlock()
})

test('beyond node-redisson: a watchdog lock\'s signal aborts when the lock is lost, never on a clean unlock', async () => {
  const rs = make(RS, { lockWatchdogTimeout: 600n })
  const reasonOf = (signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)))
  const gone = rs.getLock(fresh('signal-gone'))
  assert.equal(gone.signal, null)
  await gone.lock()
  const goneLost = reasonOf(gone.signal)
  await redis.check.del(gone.name)
  const why = await goneLost
  assert.ok(why instanceof Error && why.name === 'LockLostError', String(why))
  assert.equal(why.reason, 'expired')
  await assert.rejects(gone.unlock(), RS.RedissonLockError)
  assert.equal(await redis.check.exists(gone.name), 0, 'no renewal brought it back')

  const taken = rs.getLock(fresh('signal-taken'))
  await taken.lock()
  const takenLost = reasonOf(taken.signal)
  await redis.check.del(taken.name)
  await redis.check.hset(taken.name, 'someone:else', '1')
  assert.equal((await takenLost).reason, 'taken')
  assert.deepEqual(await redis.check.hgetall(taken.name), { 'someone:else': '1' }, "another owner's hash untouched")

  const clean = rs.getLock(fresh('signal-clean'))
  await clean.lock()
  await clean.lock()
  const signal = clean.signal
  await clean.unlock()
  await clean.unlock()
  await sleep(500)
  assert.equal(signal.aborted, false)
  await clean.lock()
  assert.notEqual(clean.signal, signal, 'a fresh signal per hold')
  await clean.unlock()
})

test('16 waiters on one lock: each release hands over, one giving up strands nobody', async () => {
  const rs = make(RS)
  const name = fresh('waiters')
  const holder = rs.getLock(name)
  await holder.tryLock(0, 30000)
  const order = []
  const quitter = rs.getLock(name).tryLock(300, 30000)
  const waiters = Array.from({ length: 16 }, (_, i) => (async () => {
    const l = rs.getLock(name)
    assert.equal(await l.tryLock(20000, 30000), true)
    order.push(i)
    await l.unlock()
  })())
  assert.equal(await quitter, false, 'the impatient waiter gives up')
  const t0 = Date.now()
  await holder.unlock()
  await Promise.all(waiters)
  assert.equal(order.length, 16)
  assert.ok(Date.now() - t0 < 5000, `16 handoffs on release, not on the 30 s lease: ${Date.now() - t0} ms`)
})

test('a release racing a waiter\'s SUBSCRIBE is not missed', async () => {
  // The waiter talks to Redis through a proxy that holds its SUBSCRIBE back:
  // the holder releases (and publishes) while nobody is subscribed yet.
  const proxy = await startProxy(redis.server.port)
  const waiterSide = new RS.Redisson({ redis: { options: { host: '127.0.0.1', port: proxy.port } } })
  opened.push(waiterSide)
  try {
    const name = fresh('release-racing-sub')
    const holder = make(RS).getLock(name)
    assert.equal(await holder.tryLock(0, 20000), true)
    proxy.holdBack(/\r\nSUBSCRIBE\r\n/i, 400) // the command, not a name
    const held = proxy.nextHold()
    const t0 = Date.now()
    const waiter = waiterSide.getLock(name)
    const waiting = waiter.tryLock(15000, 5000)
    await held // the first attempt failed; the SUBSCRIBE has not reached Redis
    await holder.unlock()
    assert.equal(await waiting, true)
    const waited = Date.now() - t0
    assert.ok(waited < 3000, `the missed announcement did not cost the holder's 20 s lease: ${waited} ms`)
    await waiter.unlock()
  } finally {
    proxy.forward()
    await waiterSide.quit()
    await proxy.close()
  }
})

test('a release by this process wakes its own waiter without waiting for Redis\'s announcement', async () => {
  // Both sides share one instance behind a proxy that holds every pub/sub
  // message from Redis back for 4 s: only the in-process wake-up is fast.
  const proxy = await startProxy(redis.server.port)
  const rs = new RS.Redisson({ redis: { options: { host: '127.0.0.1', port: proxy.port } } })
  opened.push(rs)
  try {
    proxy.holdBackReplies(/\r\nmessage\r\n/, 4000)
    const name = fresh('local-wake')
    const holder = rs.getLock(name)
    assert.equal(await holder.tryLock(0, 20000), true)
    const waiter = rs.getLock(name)
    const t0 = Date.now()
    const waiting = waiter.tryLock(15000, 5000)
    await sleep(150)
    await holder.unlock()
    assert.equal(await waiting, true)
    assert.ok(Date.now() - t0 < 2000, `woken by the local release, not the held-back message: ${Date.now() - t0} ms`)
    await waiter.unlock()
  } finally {
    proxy.forward()
    await rs.quit()
    await proxy.close()
  }
})

test('an unlock retried after a timeout decrements the hold count once', async () => {
  // The unlock reaches Redis and runs; its reply comes after the 200 ms
  // command timeout, so the unlock is sent again: the latch makes the
  // second run answer without decrementing.
  const proxy = await startProxy(redis.server.port)
  const rs = new RS.Redisson({ redis: { options: { host: '127.0.0.1', port: proxy.port, commandTimeout: 200 } } })
  opened.push(rs)
  const mon = await startMonitor(redis.server.port)
  try {
    const name = fresh('unlock-retry')
    const lock = rs.getLock(name, 'me')
    assert.equal(await lock.tryLock(0, 20000), true)
    assert.equal(await lock.tryLock(0, 20000), true)
    const [field] = Object.keys(await redis.check.hgetall(name))
    assert.equal(await redis.check.hget(name, field), '2')
    const seen = []
    mon.on((args) => { if (args.includes(name)) seen.push(args[0].toLowerCase()) })
    proxy.delayReplies(600)
    const unlocking = lock.unlock()
    await sleep(50)
    proxy.forward()
    await unlocking
    await sleep(50)
    const runs = seen.filter((c) => c === 'evalsha' || c === 'eval').length
    assert.ok(runs >= 2, `the unlock was sent twice: ${seen}`)
    assert.equal(seen.filter((c) => c === 'hincrby').length, 1, `one decrement: ${seen}`)
    assert.equal(await redis.check.hget(name, field), '1', 'decremented exactly once')
    await lock.unlock()
    assert.equal(await redis.check.exists(name), 0)
  } finally {
    mon.close()
    proxy.forward()
    await rs.quit()
    await proxy.close()
  }
})

test('bad input: node-redisson\'s errors where it rejects, clear ones where it does not', async () => {
  const rs = make(RS)
  const nr = make(NR)
  const name = fresh('bad')
  for (const [args, cls] of [[[NaN, 1000], RangeError], [[1.5, 1000], RangeError], [[Infinity, 1000], RangeError],
    [[0, 1000, {}], TypeError]]) {
    await assert.rejects(nr.getLock(name).tryLock(...args), cls, `node-redisson ${args}`)
    await assert.rejects(rs.getLock(name).tryLock(...args), cls, `redislock-rs ${args}`)
  }
  await assert.rejects(rs.getLock(name).tryLock(-1, 1000), RangeError)
  await assert.rejects(rs.getLock(name).tryLock(0, -5), RangeError)
  await assert.rejects(rs.getLock(name).tryLock(0, NaN), RangeError)
  await assert.rejects(rs.getLock(name).lock(2.5), RangeError)
  assert.throws(() => rs.getLock(''), TypeError)
  assert.throws(() => make(RS, { lockWatchdogTimeout: -1n }), RangeError)
  assert.throws(() => make(RS, { lockWatchdogTimeout: 1.5 }), RangeError)
  assert.throws(() => make(RS, { eventAdapter: 'kafka' }), TypeError)
  // Redis Cluster is served (cluster.test.js); what cannot work is refused.
  assert.throws(() => new RS.Redisson({ redis: { clusters: [] } }), TypeError)
  assert.throws(() => new RS.Redisson({ redis: { clusters: [{ host: '127.0.0.1', port: 1 }] }, eventAdapter: 'streams' }), /Cluster/)
  assert.throws(() => make(RS).redis, /no ioredis client/)
  const client = new IORedis({ port: redis.server.port, lazyConnect: true })
  assert.equal(new RS.Redisson({ redis: { client } }).redis, client)
  assert.equal(await redis.check.exists(name), 0, 'nothing reached Redis')
  // A key that is not a lock hash: RedissonLockError carrying Redis's error.
  const str = fresh('string-key')
  await redis.check.set(str, 'x')
  const err = await rs.getLock(str).tryLock(0, 1000).catch((e) => e)
  assert.ok(err instanceof RS.RedissonLockError, String(err))
  assert.match(String(err.cause && err.cause.message), /WRONGTYPE/)
})

test('a process that waited, unlocked and quit exits at once', () => {
  const script = `
    const { Redisson } = require(${JSON.stringify(require.resolve('../redisson'))})
    const r = new Redisson({ redis: { options: { port: ${redis.server.port} } } })
    const name = 'rs-test:exit:' + process.pid
    ;(async () => {
      const a = r.getLock(name), b = r.getLock(name)
      await a.tryLock(0, 10000)
      const w = b.tryLock(20000, 10000)
      setTimeout(() => a.unlock(), 50)
      await w
      await b.unlock()
      await r.quit()
      console.log('done')
    })()
  `
  const t0 = Date.now()
  const res = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 15000 })
  assert.equal(res.status, 0, res.stderr)
  assert.equal(res.stdout.trim(), 'done')
  assert.ok(Date.now() - t0 < 5000, `exited after ${Date.now() - t0} ms`)
})
