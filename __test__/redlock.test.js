'use strict'

/**
 * The node-redlock face for redlock 4.2.0 users (`redislock-rs/redlock`),
 * against the real `redlock@4.2.0` as the oracle: each scenario runs
 * through theirs and ours on their own keys of the same redis-servers and
 * must give the same results, errors, messages, Redis keys, values and
 * TTLs; theirs and ours exclude each other on the same keys; and what only
 * ours can do (a server down, several databases of one server, a Cluster's
 * slots) is checked against Redis.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const Bluebird = require('bluebird')
const redis3 = require('redis3')
const Theirs = require('redlock')
const Ours = require('../redlock')
const { startRedis, freePort, admin } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')
const { rejection } = require('./helpers/outcomes')

const servers = []
const clients = []
let check
let seq = 0
const fresh = (what) => `redlock:${what}:${process.pid}:${seq++}`

function client (port, options = {}) {
  const c = redis3.createClient({ port, host: '127.0.0.1', ...options })
  c.on('error', () => {})
  clients.push(c)
  return c
}

before(async () => {
  for (let i = 0; i < 3; i++) servers.push(await startRedis())
  check = admin(servers[0].port)
})

after(async () => {
  for (const c of clients) c.quit()
  await check.quit()
  for (const s of servers) await s.stop()
})

const IMPLS = [['theirs', Theirs], ['ours', Ours]]

/** Runs `scenario(Redlock, key)` through theirs and ours; their results must be equal. */
async function same (scenario, count = 1) {
  const results = {}
  for (const [name, Redlock] of IMPLS) {
    const keys = Array.from({ length: count }, () => fresh(name))
    results[name] = await scenario(Redlock, keys, name)
  }
  assert.deepEqual(results.ours, results.theirs)
  return results.ours
}

/** What a LockError looks like, with `keys` written as k0, k1, … */
function errorShape (err, Redlock, keys) {
  return {
    isLockError: err instanceof Redlock.LockError,
    isError: err instanceof Error,
    name: err.name,
    message: anonymize(err.message, keys),
    attempts: err.attempts,
    own: Object.keys(err)
  }
}

function anonymize (text, keys) {
  keys.forEach((k, i) => { text = text.split(k).join(`k${i}`) })
  return text
}

test('the exports: Redlock with Lock and LockError; an empty server list is refused with redlock\'s message', async () => {
  assert.equal(typeof Ours, 'function')
  assert.equal(typeof Ours.Lock, 'function')
  assert.equal(typeof Ours.LockError, 'function')
  const refusal = (R) => { try { return new R([]) } catch (e) { return e.message } }
  assert.equal(refusal(Ours), refusal(Theirs))
  const esm = await import('../redlock.mjs')
  assert.equal(esm.default, Ours)
  assert.equal(esm.LockError, Ours.LockError)
  // Same own properties and defaults as theirs.
  const c = client(servers[0].port)
  const theirs = new Theirs([c])
  const ours = new Ours([c])
  assert.deepEqual(Object.keys(ours), Object.keys(theirs))
  for (const k of ['driftFactor', 'retryCount', 'retryDelay', 'retryJitter', 'lockScript', 'unlockScript', 'extendScript', 'scripts']) {
    assert.deepEqual(ours[k], theirs[k], k)
  }
  assert.ok(typeof ours.on === 'function' && typeof ours.emit === 'function')
})

test('lock: the Lock\'s shape, its key\'s value and TTL, a Bluebird promise', async () => {
  const c = client(servers[0].port)
  const out = await same(async (Redlock, [key]) => {
    const redlock = new Redlock([c])
    const p = redlock.lock(key, 1000)
    const bluebird = typeof p.nodeify === 'function' && typeof p.disposer === 'function'
    const lock = await p
    const left = lock.expiration - Date.now()
    const shape = {
      bluebird,
      isLock: lock instanceof Redlock.Lock,
      own: Object.keys(lock),
      resource: anonymize(JSON.stringify(lock.resource), [key]),
      redlock: lock.redlock === redlock,
      hex32: /^[0-9a-f]{32}$/.test(lock.value),
      expiration: left > 900 && left <= 1000,
      attempts: lock.attempts,
      attemptsRemaining: lock.attemptsRemaining,
      stored: (await check.get(key)) === lock.value,
      pttl: await check.pttl(key).then((t) => t > 900 && t <= 1000)
    }
    await lock.unlock()
    return shape
  })
  assert.equal(out.stored, true)
  assert.equal(out.attempts, 1)
})

test('a held resource: retries, then redlock\'s LockError with its message and attempts', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, [key]) => {
    await check.set(key, 'someone', 'PX', 5000)
    const redlock = new Redlock([c], { retryCount: 2, retryDelay: 10, retryJitter: 0 })
    const err = await rejection(redlock.lock(key, 1000))
    const viaOptions = await rejection(redlock.lockWithOptions(key, 1000, { retryCount: 1, retryDelay: 5 }))
    return {
      err: errorShape(err, Redlock, [key]),
      viaOptions: errorShape(viaOptions, Redlock, [key]),
      untouched: (await check.get(key)) === 'someone'
    }
  })
})

test('several resources: all or nothing, one script per server', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, keys) => {
    const redlock = new Redlock([c], { retryCount: 0 })
    const lock = await redlock.lock(keys.slice(0, 2), 2000)
    const both = await check.mget(keys[0], keys[1])
    // keys[1] is held: keys[1] and keys[2] together are refused, and keys[2] stays free.
    const err = await rejection(redlock.lock([keys[2], keys[1]], 2000))
    const third = await check.exists(keys[2])
    await lock.unlock()
    return {
      resource: anonymize(JSON.stringify(lock.resource), keys),
      both: both.every((v) => v === lock.value),
      err: errorShape(err, Redlock, keys),
      third,
      after: await check.exists(keys[0], keys[1])
    }
  }, 3)
})

test('unlock: the keys go, expiration is 0; a second unlock fails with redlock\'s message', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, keys) => {
    const redlock = new Redlock([c])
    const lock = await redlock.lock(keys, 1000)
    const released = await lock.unlock()
    const gone = await check.exists(...keys)
    const again = await rejection(redlock.unlock(lock))
    return { released, gone, expiration: lock.expiration, again: errorShape(again, Redlock, keys) }
  }, 2)
})

test('extend: the same lock, a new expiration and TTL; an expired lock is refused with attempts 0', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, [key]) => {
    const redlock = new Redlock([c])
    const lock = await redlock.lock(key, 1000)
    const value = lock.value
    const extended = await redlock.extend(lock, 5000)
    const shape = {
      same: extended === lock,
      value: lock.value === value,
      expiration: lock.expiration - Date.now() > 4000,
      pttl: (await check.pttl(key)) > 4000
    }
    const viaLock = await lock.extend(6000)
    shape.viaLock = viaLock === lock && (await check.pttl(key)) > 5000
    lock.expiration = Date.now() - 1
    shape.expired = errorShape(await rejection(lock.extend(1000)), Redlock, [key])
    // Someone else's now: the extend script refuses it, and redlock 4 retries.
    await check.set(key, 'someone', 'PX', 5000)
    const r2 = new Redlock([c], { retryCount: 1, retryDelay: 5, retryJitter: 0 })
    lock.redlock = r2
    lock.expiration = Date.now() + 1000
    shape.taken = errorShape(await rejection(lock.extend(1000)), Redlock, [key])
    shape.untouched = (await check.get(key)) === 'someone'
    return shape
  })
})

test('callbacks: lock, extend and unlock call back as redlock 4.2.0 does', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, [key]) => {
    const redlock = new Redlock([c], { retryCount: 0 })
    const got = await new Promise((resolve) => redlock.lock(key, 1000, (err, lock) => resolve({ err, lock })))
    const held = await new Promise((resolve) => redlock.lock(key, 1000, (err, lock) => resolve({ err, lock })))
    const ext = await new Promise((resolve) => got.lock.extend(2000, (err, lock) => resolve({ err, same: lock === got.lock })))
    const unl = await new Promise((resolve) => redlock.unlock(got.lock, (...args) => resolve(args)))
    return {
      gotErr: got.err,
      gotLock: got.lock instanceof Redlock.Lock,
      held: errorShape(held.err, Redlock, [key]),
      heldLock: held.lock,
      ext,
      unl
    }
  })
})

test('disposer: Bluebird.using holds the lock for the routine and unlocks it after', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, [key]) => {
    const redlock = new Redlock([c])
    const inside = await Bluebird.using(redlock.disposer(key, 1000), async (lock) => (await check.get(key)) === lock.value)
    return { inside, after: await check.exists(key) }
  })
})

test('script transforms are honoured: the same scripts and hashes as theirs, run by EVALSHA', async () => {
  const c = client(servers[0].port)
  const transform = { lockScript: (s) => s + '\n-- lock, transformed', unlockScript: (s) => s.split('count').join('removed'), extendScript: (s) => '-- mine\n' + s }
  const theirs = new Theirs([c], transform)
  const ours = new Ours([c], transform)
  assert.deepEqual(ours.scripts, theirs.scripts)
  await check.script('FLUSH')
  const key = fresh('scripts')
  const lock = await ours.lock(key, 1000)
  await ours.extend(lock, 2000)
  await ours.unlock(lock)
  const hashes = ['lockScript', 'unlockScript', 'extendScript'].map((k) => ours.scripts[k].hash)
  assert.deepEqual(await check.script('EXISTS', ...hashes), [1, 1, 1])
  assert.throws(() => new Ours([c], { lockScript: () => 42 }), /lockScript must be a function that returns the script's text/)
})

test('theirs and ours exclude each other on the same resources, one and several', async () => {
  const c = client(servers[0].port)
  const theirs = new Theirs([c], { retryCount: 1, retryDelay: 10, retryJitter: 0 })
  const ours = new Ours([c], { retryCount: 1, retryDelay: 10, retryJitter: 0 })
  for (const [first, second] of [[theirs, ours], [ours, theirs]]) {
    const [a, b, d] = [fresh('mix'), fresh('mix'), fresh('mix')]
    const lock = await first.lock([a, b], 2000)
    await assert.rejects(second.lock(a, 1000), { name: 'LockError' })
    await assert.rejects(second.lock([d, b], 1000), { name: 'LockError' })
    assert.equal(await check.exists(d), 0)
    // Each releases only its own value.
    await assert.rejects(second.unlock({ resource: [a, b], value: 'not-theirs' }), { name: 'LockError' })
    assert.equal(await check.exists(a, b), 2)
    await first.unlock(lock)
    const next = await second.lock([a, b, d], 1000)
    await first.unlock({ resource: [a, b, d], value: next.value })
    assert.equal(await check.exists(a, b, d), 0)
  }
})

test('three servers, one down: granted by the majority, clientError tells; two down: refused', async () => {
  const dead = [await freePort(), await freePort()]
  const live = servers.map((s) => ({ host: '127.0.0.1', port: s.port, connectTimeout: 300, commandTimeout: 500 }))
  const down = dead.map((port) => ({ host: '127.0.0.1', port, connectTimeout: 300, commandTimeout: 500 }))
  const redlock = new Ours([live[0], live[1], down[0]], { retryCount: 0 })
  const errors = []
  redlock.on('clientError', (err) => errors.push(err))
  const key = fresh('majority')
  const lock = await redlock.lock(key, 2000)
  assert.equal(lock.attempts, 1)
  assert.ok(errors.length >= 1 && errors.every((e) => e instanceof Error), 'the unreachable server is reported')
  for (const s of servers.slice(0, 2)) {
    const a = admin(s.port)
    assert.equal(await a.get(key), lock.value)
    await a.quit()
  }
  await lock.unlock()
  const minority = new Ours([live[2], down[0], down[1]], { retryCount: 1, retryDelay: 5 })
  const err = await rejection(minority.lock(fresh('minority'), 2000))
  assert.equal(err.name, 'LockError')
  assert.equal(err.attempts, 2)
  assert.match(err.message, /^Exceeded 1 attempts to lock the resource "redlock:minority:/)
})

test('one server in two databases is two servers; a URL and an options object are servers too', async () => {
  const port = servers[1].port
  const redlock = new Ours([`redis://127.0.0.1:${port}/1`, { host: '127.0.0.1', port, db: 2 }], { retryCount: 0 })
  const key = fresh('dbs')
  const lock = await redlock.lock(key, 2000)
  for (const db of [1, 2]) {
    const a = admin(port, { db })
    assert.equal(await a.get(key), lock.value)
    await a.quit()
  }
  // Majority of two is two: one database held by another refuses the lock.
  await lock.unlock()
  const a = admin(port, { db: 2 })
  await a.set(key, 'someone', 'PX', 5000)
  await a.quit()
  await assert.rejects(redlock.lock(key, 2000), { name: 'LockError' })
})

test('bad input is refused at once with a LockError that says why, and nothing is written', async () => {
  const c = client(servers[0].port)
  const redlock = new Ours([c])
  const key = fresh('bad')
  for (const ttl of [0, -5, 1.5, '1000', undefined, NaN]) {
    const err = await rejection(redlock.lock(key, ttl))
    assert.equal(err.name, 'LockError')
    assert.equal(err.attempts, 0)
    assert.match(err.message, /^Invalid ttl /)
  }
  for (const resource of [[], '', [key, null], { key }]) {
    const err = await rejection(redlock.lock(resource, 1000))
    assert.equal(err.name, 'LockError')
    assert.match(err.message, /^Invalid resource /)
  }
  assert.equal(await check.exists(key), 0)
})

test('quit: quits every client given', async () => {
  const a = client(servers[0].port)
  const b = client(servers[1].port)
  await new Ours([a, b, servers[2].url]).quit()
  await sleep(50)
  assert.equal(a.connected, false)
  assert.equal(b.connected, false)
})

test('faults: a black-holed server does not hold the lock up; slow servers cost the validity, and what they took is given back', async () => {
  const { startProxy } = require('./helpers/proxy')
  const proxies = [await startProxy(servers[1].port), await startProxy(servers[2].port)]
  const server = (port) => ({ host: '127.0.0.1', port, connectTimeout: 1000, commandTimeout: 2000 })
  try {
    const list = [server(servers[0].port), ...proxies.map((p) => server(p.port))]
    const redlock = new Ours(list, { retryCount: 0 })
    // Connections up first, so the faults below hit commands, not connects.
    await (await redlock.lock(fresh('warm'), 2000)).unlock()
    proxies[1].blackhole()
    const key = fresh('blackhole')
    const started = Date.now()
    const lock = await redlock.lock(key, 2000)
    const took = Date.now() - started
    assert.ok(took < 1500, `granted by the two that answer, within the server timeout (${took} ms)`)
    // Granted by the two that answered (the warm-up loaded the script on
    // every connection, so the black hole's EVALSHA is final once sent and
    // its vote could not change the result): validity is the TTL less
    // redlock's drift (22 ms of 2000) and the time those two took.
    assert.ok(lock.expiration - Date.now() <= 2000 - 22, `validity ${lock.expiration - Date.now()} ms`)
    assert.equal(await check.get(key), lock.value)
    await lock.unlock()
    proxies[1].forward()
    // Two of three slow past the server timeout (a tenth of 1000 ms): no majority.
    for (const p of proxies) p.delayReplies(400)
    const slow = fresh('slow')
    const err = await rejection(redlock.lock(slow, 1000))
    assert.equal(err.name, 'LockError')
    assert.equal(err.message, `Exceeded 0 attempts to lock the resource "${slow}".`)
    await sleep(1200)
    for (const s of servers) {
      const a = admin(s.port)
      assert.equal(await a.exists(slow), 0, `given back on ${s.port}`)
      await a.quit()
    }
  } finally {
    for (const p of proxies) await p.close()
  }
})

test('faults: a server that is always the slowest still takes every lock (its script is loaded there, not left to a NOSCRIPT nobody hears)', async () => {
  // Replies from the third server come 20 ms late, so it answers last every
  // time. A grant may leave it unheard only where its EVALSHA cannot be
  // answered NOSCRIPT (the script known loaded on that connection): else
  // nobody would send the EVAL, and the lock would never be taken there.
  const { startProxy } = require('./helpers/proxy')
  const fresh3 = await startRedis()
  const proxy = await startProxy(fresh3.port)
  try {
    proxy.delayReplies(20)
    const list = [servers[0].port, servers[1].port, proxy.port].map((port) => ({ host: '127.0.0.1', port }))
    const redlock = new Ours(list, { retryCount: 0 })
    const third = admin(fresh3.port)
    const cycle = async () => {
      const key = fresh('slowest')
      const lock = await redlock.lock(key, 5000)
      // A grant may leave the third server unheard (its script known loaded
      // there): its SET lands a moment later.
      let got = null
      for (let t = 0; t < 50 && got === null; t++) {
        got = await third.get(key)
        if (got === null) await sleep(10)
      }
      await lock.unlock()
      return got === lock.value
    }
    for (let i = 0; i < 5; i++) assert.ok(await cycle(), `lock ${i} taken on the slowest server`)
    // Its scripts flushed: the next release meets a NOSCRIPT, so the lock
    // after it waits for that server again and loads the script there.
    await third.script('FLUSH')
    await cycle()
    for (let i = 0; i < 4; i++) assert.ok(await cycle(), `after SCRIPT FLUSH, lock ${i + 2} taken on the slowest server`)
    await third.quit()
  } finally {
    await proxy.close()
    await fresh3.stop()
  }
})

test('faults: a server restarted (its keys gone) is used again once it is back', async () => {
  const list = servers.map((s) => ({ host: '127.0.0.1', port: s.port, connectTimeout: 300, commandTimeout: 1000 }))
  const redlock = new Ours(list, { retryCount: 3, retryDelay: 100 })
  const key = fresh('restart')
  const lock = await redlock.lock(key, 5000)
  await servers[2].restart()
  // Still held on a majority: the same resource is refused to another value.
  await assert.rejects(new Ours(list, { retryCount: 0 }).lock(key, 1000), { name: 'LockError' })
  await lock.unlock()
  const again = await redlock.lock(key, 5000)
  const a = admin(servers[2].port)
  assert.equal(await a.get(key), again.value, 'the restarted server took part again')
  await a.quit()
  await again.unlock()
})

test('lock.signal, beyond redlock 4.2.0: aborted with a LockLostError when an extend or unlock finds the lock gone, never by a clean unlock', async () => {
  const c = client(servers[0].port)
  const redlock = new Ours([c], { retryCount: 0 })
  const clean = await redlock.lock(fresh('signal'), 2000)
  const cleanSignal = clean.signal
  await clean.unlock()
  assert.equal(cleanSignal.aborted, false)
  assert.ok(!Object.keys(clean).includes('signal'), 'not one of the lock\'s own properties')
  for (const how of ['extend', 'unlock']) {
    const key = fresh('signal')
    const lock = await redlock.lock(key, 2000)
    await check.del(key)
    await assert.rejects(how === 'extend' ? lock.extend(2000) : lock.unlock(), { name: 'LockError' })
    assert.equal(lock.signal.aborted, true, how)
    assert.equal(lock.signal.reason.name, 'LockLostError')
    assert.equal(lock.signal.reason.reason, 'expired')
  }
})

test('wakeOnRelease, beyond redlock 4.2.0: a waiter on several resources wakes when a release announces one of them, on every server, not after its retryDelay', async () => {
  const [a, b, c] = [fresh('wake'), fresh('wake'), fresh('wake')]
  const channel = (k) => `{${k}}:redislock-rs:released`
  // The holder on other endpoints (another commandTimeout): its release
  // does not wake the waiter in-process; the word comes through Redis.
  const holder = new Ours(servers.map((s) => ({ host: '127.0.0.1', port: s.port, commandTimeout: 700 })), { wakeOnRelease: true, retryCount: 0 })
  const waiter = new Ours(servers.map((s) => client(s.port)), { wakeOnRelease: true, retryCount: 3, retryDelay: 10000, retryJitter: 0 })
  const held = await holder.lock([b], 20000)
  const t0 = Date.now()
  const waiting = waiter.lock([a, b, c], 20000)
  const checks = servers.map((s) => admin(s.port))
  try {
    let subscribed = []
    for (let i = 0; i < 100; i++) {
      await sleep(20)
      subscribed = await Promise.all(checks.map(async (x) => (await x.pubsub('NUMSUB', channel(a), channel(b), channel(c))).filter((_, j) => j % 2 === 1)))
      if (subscribed.every((n) => n.every((v) => v === 1))) break
    }
    assert.deepEqual(subscribed, Array(3).fill([1, 1, 1]), 'each resource\'s channel, on every server')
    // The release announces on b's channel: the same keys, redlock's values.
    await held.unlock()
    const lock = await waiting
    const took = Date.now() - t0
    assert.ok(took < 5000, `woken by the release, not the 10 s retryDelay: ${took} ms`)
    // The first, the one after subscribing, then the wake-ups': the first
    // server's word can come before the others' deletes, so one more at times.
    assert.ok(lock.attempts >= 3 && lock.attempts <= 6, `attempts: ${lock.attempts}`)
    // Woken by the first server's word, its attempt can reach a server before
    // the holder's delete does: a majority is what it needs and gets.
    for (const k of [a, b, c]) {
      const held = (await Promise.all(checks.map((x) => x.get(k)))).filter((v) => v === lock.value).length
      assert.ok(held >= 2, `${k} held on ${held} of 3`)
    }
    // The release of the waiter's lock is announced too, and a redlock
    // 4.2.0 holder (theirs never announces) is still found free by polling.
    const theirs = new Theirs([client(servers[0].port)], { retryCount: 0 })
    await lock.unlock()
    for (const k of [a, b, c]) assert.equal(await check.get(k), null)
    const again = await theirs.lock(a, 1000)
    await again.unlock()
    // An unlockScript transform cannot be honoured with it: refused.
    assert.throws(() => new Ours([client(servers[0].port)], { wakeOnRelease: true, unlockScript: (s) => s }), { name: 'TypeError', message: /unlockScript/ })
    assert.throws(() => new Ours([client(servers[0].port)], { wakeOnRelease: 'yes' }), TypeError)
  } finally {
    await Promise.all(checks.map((x) => x.quit()))
  }
})

test('a resource key that holds a set: clientError tells each server\'s WRONGTYPE on every attempt, as redlock 4.2.0 does, and the LockError says why', async () => {
  for (const n of [1, 3]) {
    const cs = servers.slice(0, n).map((s) => client(s.port))
    const out = await same(async (Redlock, [key], name) => {
      for (const c of cs) await new Promise((resolve, reject) => c.sadd(key, 'not a lock', (e) => e ? reject(e) : resolve()))
      const redlock = new Redlock(cs, { retryCount: 2, retryDelay: 20, retryJitter: 0 })
      const told = []
      redlock.on('clientError', (err) => told.push(err instanceof Error && err.message.split(' ')[0]))
      const err = await rejection(redlock.lock(key, 200))
      // Ours says more, after redlock's own sentence.
      const first = err.message.slice(0, err.message.indexOf('".') + 2)
      if (name === 'ours') assert.match(err.message, /The key holds a value of another type, not a lock \(Redis: WRONGTYPE /)
      return { told, first: anonymize(first, [key]), attempts: err.attempts, name: err.name }
    })
    assert.equal(out.told.length, 3 * n, `retryCount + 1 events per server (${n} servers)`)
    assert.ok(out.told.every((w) => w === 'WRONGTYPE'))
  }
})
