'use strict'

/**
 * The node-redlock 5 face (`redislock-rs/redlock/v5`) against its two
 * oracles, node-redlock 5.0.0-beta.2 (`redlock@next`) and
 * @sesamecare-oss/redlock 1.4.0: each scenario runs through each of them
 * and through ours, on their own keys of the same redis-servers, and must
 * give the same results, errors, messages, votes, keys and TTLs; theirs
 * and ours exclude each other; and what only ours promises (an `error`
 * event that never crashes, `using()` that releases at once, a server down)
 * is checked against Redis.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const IORedis = require('ioredis')
const Beta = require('redlock5').default
const Sesame = require('@sesamecare-oss/redlock').Redlock
const ours = require('../redlock-v5')
const { startRedis, freePort, admin } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')
const { rejection } = require('./helpers/outcomes')

const Ours = ours.default
const servers = []
const clients = []
let check
let seq = 0
const fresh = (what) => `redlock5:${what}:${process.pid}:${seq++}`

function client (port, options = {}) {
  const c = new IORedis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, ...options })
  c.on('error', () => {})
  clients.push(c)
  return c
}

before(async () => {
  for (let i = 0; i < 3; i++) servers.push(await startRedis())
  check = admin(servers[0].port)
})

after(async () => {
  for (const c of clients) c.disconnect()
  await check.quit()
  for (const s of servers) await s.stop()
})

const ORACLES = [['node-redlock 5.0.0-beta.2', Beta, require('redlock5')], ['@sesamecare-oss/redlock 1.4.0', Sesame, require('@sesamecare-oss/redlock')]]

/** Runs `scenario(Redlock, errors, keys)` through an oracle and through ours; the results must be equal. */
async function same (scenario, count = 1) {
  for (const [name, Theirs, theirModule] of ORACLES) {
    const results = []
    for (const [Redlock, errors] of [[Theirs, theirModule], [Ours, ours]]) {
      const keys = Array.from({ length: count }, () => fresh('k'))
      results.push(await scenario(Redlock, errors, keys))
    }
    assert.deepEqual(results[1], results[0], `ours differs from ${name}`)
  }
}

/** What an ExecutionStats says, with the clients named by their index in `list`. */
async function statsOf (attempts, list) {
  const out = []
  for (const p of attempts) {
    const s = await p
    out.push({
      membershipSize: s.membershipSize,
      quorumSize: s.quorumSize,
      votesFor: [...s.votesFor].map((c) => list.indexOf(c)).sort(),
      votesAgainst: [...s.votesAgainst].map(([c, e]) => [list.indexOf(c), e.name, e.message]).sort()
    })
  }
  return out
}

function errorShape (err, errors, keys) {
  return {
    name: err.name,
    message: keys.reduce((m, k, i) => m.split(k).join(`k${i}`), err.message),
    isExecutionError: err instanceof errors.ExecutionError,
    isError: err instanceof Error,
    attempts: Array.isArray(err.attempts) ? err.attempts.length : err.attempts
  }
}

test('the exports, the settings and their defaults, the empty-client refusal', async () => {
  const esm = await import('../redlock-v5.mjs')
  assert.equal(esm.default, Ours)
  assert.equal(esm.Redlock, Ours)
  for (const name of ['Lock', 'ExecutionError', 'ResourceLockedError']) assert.equal(typeof ours[name], 'function', name)
  const c = client(servers[0].port)
  for (const [, Theirs] of ORACLES) {
    const refusal = (R) => { try { return new R([]) } catch (e) { return e.message } }
    assert.equal(refusal(Ours), refusal(Theirs))
    const theirs = new Theirs([c, c], { retryCount: 3 })
    const mine = new Ours([c, c], { retryCount: 3 })
    const { db, ...settings } = theirs.settings
    assert.deepEqual({ ...mine.settings }, settings)
    assert.deepEqual([...mine.clients], [...theirs.clients])
  }
  assert.deepEqual(new Ours([c]).scripts, new Beta([c]).scripts, 'node-redlock 5\'s scripts, byte for byte')
})

test('acquire: the Lock, its votes, its key\'s value and TTL', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, errors, keys) => {
    const redlock = new Redlock([c])
    const lock = await redlock.acquire(keys, 1000)
    const left = lock.expiration - Date.now()
    const shape = {
      isLock: lock instanceof errors.Lock,
      own: Object.keys(lock).filter((k) => k !== 'settings'),
      resources: lock.resources === keys,
      hex32: /^[0-9a-f]{32}$/.test(lock.value),
      expiration: left > 900 && left <= 1000,
      stats: await statsOf(lock.attempts, [c]),
      stored: (await check.mget(...keys)).every((v) => v === lock.value),
      pttl: (await check.pttl(keys[0])) > 900
    }
    await lock.release()
    return shape
  }, 2)
})

test('a held resource: retries, then ExecutionError with every attempt\'s votes', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, errors, keys) => {
    await check.set(keys[1], 'someone', 'PX', 5000)
    const redlock = new Redlock([c], { retryCount: 2, retryDelay: 10, retryJitter: 0 })
    const err = await rejection(redlock.acquire(keys, 1000))
    return {
      err: errorShape(err, errors, keys),
      stats: await statsOf(err.attempts, [c]),
      locked: err.attempts.length > 0 && (await err.attempts[0]).votesAgainst.get(c) instanceof errors.ResourceLockedError,
      free: await check.exists(keys[0]),
      untouched: (await check.get(keys[1])) === 'someone'
    }
  }, 2)
})

test('release: the keys go and expiration is 0; a second release fails its retry window', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, errors, keys) => {
    const redlock = new Redlock([c], { retryCount: 1, retryDelay: 10, retryJitter: 0 })
    const lock = await redlock.acquire(keys, 1000)
    const result = await redlock.release(lock)
    return {
      expiration: lock.expiration,
      stats: await statsOf(result.attempts, [c]),
      gone: await check.exists(...keys),
      again: errorShape(await rejection(lock.release()), errors, keys)
    }
  }, 2)
})

test('extend: a new Lock, the old one expires; an expired lock and a fractional duration are refused', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, errors, keys) => {
    const redlock = new Redlock([c])
    const lock = await redlock.acquire(keys, 1000)
    const next = await lock.extend(5000)
    const shape = {
      newLock: next !== lock && next instanceof errors.Lock,
      value: next.value === lock.value,
      old: lock.expiration,
      expiration: next.expiration - Date.now() > 4000,
      pttl: (await check.pttl(keys[0])) > 4000,
      stats: await statsOf(next.attempts, [c]),
      expired: errorShape(await rejection(lock.extend(1000)), errors, keys),
      fractional: errorShape(await rejection(redlock.extend(next, 1.5)), errors, keys),
      fractionalAcquire: errorShape(await rejection(redlock.acquire(keys, 10.5)), errors, keys)
    }
    await next.release()
    return shape
  })
})

test('using: the routine runs with the lock held and extended, then it is released; the routine\'s error wins', async () => {
  const c = client(servers[0].port)
  await same(async (Redlock, errors, keys) => {
    const redlock = new Redlock([c], { automaticExtensionThreshold: 200 })
    const out = await redlock.using(keys, 400, async (signal) => {
      await sleep(500)
      return { aborted: signal.aborted, held: (await check.exists(keys[0])) === 1 }
    })
    out.after = await check.exists(keys[0])
    const thrown = await rejection(redlock.using(keys, 1000, async () => { throw new Error('routine failed') }))
    out.thrown = thrown.message
    out.afterThrow = await check.exists(keys[0])
    out.threshold = (await rejection(redlock.using(keys, 250, async () => 1))).message
    return out
  })
})

test('theirs and ours exclude each other on the same resources', async () => {
  const c = client(servers[0].port)
  const settings = { retryCount: 1, retryDelay: 10, retryJitter: 0 }
  for (const [name, Theirs] of ORACLES) {
    const theirs = new Theirs([c], settings)
    const mine = new Ours([c], settings)
    for (const [first, second] of [[theirs, mine], [mine, theirs]]) {
      const [a, b, d] = [fresh('mix'), fresh('mix'), fresh('mix')]
      const lock = await first.acquire([a, b], 2000)
      await assert.rejects(second.acquire([a], 1000), { name: 'ExecutionError' }, name)
      await assert.rejects(second.acquire([d, b], 1000), { name: 'ExecutionError' }, name)
      assert.equal(await check.exists(d), 0, name)
      await lock.release()
      const next = await second.acquire([a, b, d], 1000)
      await next.release()
      assert.equal(await check.exists(a, b, d), 0, name)
    }
  }
})

test('sesamecare\'s db: the keys land in that database, as @sesamecare-oss/redlock puts them', async () => {
  const c = client(servers[1].port)
  for (const Redlock of [Sesame, Ours]) {
    const redlock = new Redlock([c], { db: 3 })
    const key = fresh('db')
    const lock = await redlock.acquire([key], 2000)
    const a = admin(servers[1].port, { db: 3 })
    assert.equal(await a.get(key), lock.value)
    await lock.release()
    assert.equal(await a.exists(key), 0)
    await a.quit()
  }
  assert.throws(() => new Ours([c], { db: -1 }), /db must be a non-negative integer/)
})

test('three servers, one down: granted by the majority; the error event tells and crashes nothing', async () => {
  const dead = { host: '127.0.0.1', port: await freePort(), connectTimeout: 300, commandTimeout: 500 }
  const live = servers.slice(0, 2).map((s) => client(s.port))
  const redlock = new Ours([...live, dead], { retryCount: 0 })
  redlock.removeAllListeners('error')
  const errors = []
  const got = await redlock.acquire([fresh('down')], 2000)
  const stats = await got.attempts[0]
  assert.equal(stats.votesFor.size, 2)
  assert.ok(stats.votesFor.has(live[0]) && stats.votesFor.has(live[1]), 'votes are keyed by the clients passed')
  assert.ok(stats.votesAgainst.get(dead) instanceof Error)
  await got.release()
  redlock.on('error', (e) => errors.push(e))
  const minority = new Ours([live[0], dead, { ...dead, port: await freePort() }], { retryCount: 1, retryDelay: 10 })
  minority.on('error', (e) => errors.push(e))
  const err = await rejection(minority.acquire([fresh('minority')], 2000))
  assert.equal(err.name, 'ExecutionError')
  assert.equal(err.attempts.length, 2)
  assert.ok(errors.length >= 4, `an error event per failed vote (${errors.length})`)
})

test('using, beyond node-redlock 5: the lease keeper renews the lock through a blocked event loop', async () => {
  const { block } = require('./helpers/wait')
  const c = client(servers[0].port)
  const redlock = new Ours([c], { automaticExtensionThreshold: 200 })
  const key = fresh('blocked')
  const out = await redlock.using([key], 600, async (signal, { lock }) => {
    block(2000) // three leases' worth with the event loop stuck
    await sleep(100)
    return { aborted: signal.aborted, ours: (await check.get(key)) === lock.value, pttl: await check.pttl(key) }
  })
  assert.deepEqual({ ...out, pttl: out.pttl > 0 }, { aborted: false, ours: true, pttl: true })
  assert.equal(await check.exists(key), 0, 'released after the routine')
})

test('using, beyond node-redlock 5: a lost lock aborts the signal at once with a LockLostError', async () => {
  const c = client(servers[0].port)
  const redlock = new Ours([c], { automaticExtensionThreshold: 200 })
  const key = fresh('lost')
  const started = Date.now()
  let out = null
  // The release that follows finds nothing of ours: as node-redlock 5's
  // using(), that rejects (the routine's value is lost with the lock).
  const err = await rejection(redlock.using([key], 900, async (signal) => {
    await check.del(key)
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
    out = { aborted: signal.aborted, name: signal.error.name, reason: signal.error.reason, took: Date.now() - started }
  }))
  assert.equal(err.name, 'ExecutionError')
  assert.equal(out.aborted, true)
  assert.equal(out.name, 'LockLostError')
  assert.equal(out.reason, 'expired')
  assert.ok(out.took < 900, `noticed within a lease (${out.took} ms)`)
})

test('faults through the v5 face: a black-holed server does not hold the lock up; slow servers cost the validity and what they took is given back', async () => {
  const { startProxy } = require('./helpers/proxy')
  const proxies = [await startProxy(servers[1].port), await startProxy(servers[2].port)]
  const server = (port) => ({ host: '127.0.0.1', port, connectTimeout: 1000, commandTimeout: 2000 })
  try {
    const redlock = new Ours([server(servers[0].port), ...proxies.map((p) => server(p.port))], { retryCount: 0 })
    await (await redlock.acquire([fresh('warm')], 2000)).release()
    proxies[1].blackhole()
    const key = fresh('blackhole')
    const started = Date.now()
    const lock = await redlock.acquire([key], 2000)
    assert.ok(Date.now() - started < 1500, 'granted by the two that answer, within the server timeout')
    const stats = await lock.attempts[0]
    assert.equal(stats.votesFor.size, 2)
    assert.equal(stats.votesAgainst.size, 1)
    assert.equal(await check.get(key), lock.value)
    proxies[1].forward()
    await lock.release({ retryCount: 0 }).catch(() => {})
    for (const p of proxies) p.delayReplies(400)
    const slow = fresh('slow')
    const err = await rejection(redlock.acquire([slow], 1000))
    assert.equal(err.name, 'ExecutionError')
    assert.equal(err.message, 'The operation was unable to achieve a quorum during its retry window.')
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

test('faults through the v5 face: a server restarted (its keys gone) is used again once it is back', async () => {
  const list = servers.map((s) => ({ host: '127.0.0.1', port: s.port, connectTimeout: 300, commandTimeout: 1000 }))
  const redlock = new Ours(list, { retryCount: 3, retryDelay: 100 })
  const key = fresh('restart')
  const lock = await redlock.acquire([key], 5000)
  await servers[2].restart()
  await assert.rejects(new Ours(list, { retryCount: 0 }).acquire([key], 1000), { name: 'ExecutionError' })
  await lock.release()
  const again = await redlock.acquire([key], 5000)
  const a = admin(servers[2].port)
  assert.equal(await a.get(key), again.value, 'the restarted server took part again')
  await a.quit()
  await again.release()
})

test('lock.signal, beyond node-redlock 5: aborted with a LockLostError when an extend or release finds the lock gone, never by a clean release', async () => {
  const c = client(servers[0].port)
  const redlock = new Ours([c], { retryCount: 0 })
  const clean = await redlock.acquire([fresh('signal')], 2000)
  const signal = clean.signal
  await clean.release()
  assert.equal(signal.aborted, false)
  for (const how of ['extend', 'release']) {
    const key = fresh('signal')
    const lock = await redlock.acquire([key], 2000)
    await check.del(key)
    await assert.rejects(how === 'extend' ? lock.extend(2000) : lock.release(), { name: 'ExecutionError' })
    assert.equal(lock.signal.aborted, true, how)
    assert.equal(lock.signal.reason.name, 'LockLostError')
    assert.equal(lock.signal.reason.reason, 'expired')
  }
})

test('wakeOnRelease, beyond node-redlock 5: a release wakes a waiter on its resources at once, from the constructor or per call', async () => {
  const keys = [fresh('wake'), fresh('wake')]
  const channel = (k) => `{${k}}:redislock-rs:released`
  // The holder on other endpoints (another commandTimeout): the word comes through Redis.
  const holder = new Ours(servers.map((s) => ({ host: '127.0.0.1', port: s.port, commandTimeout: 700 })), { retryCount: 0 })
  const waiter = new Ours(servers.map((s) => client(s.port)), { wakeOnRelease: true, retryCount: 3, retryDelay: 10000, retryJitter: 0 })
  assert.equal(waiter.settings.wakeOnRelease, true)
  // Per-call settings: the lock remembers them, so its release announces.
  const held = await holder.acquire([keys[1]], 20000, { wakeOnRelease: true })
  const t0 = Date.now()
  const waiting = waiter.acquire(keys, 20000)
  const checks = servers.map((s) => admin(s.port))
  try {
    let subscribed = []
    for (let i = 0; i < 100; i++) {
      await sleep(20)
      subscribed = await Promise.all(checks.map(async (x) => (await x.pubsub('NUMSUB', channel(keys[1])))[1]))
      if (subscribed.every((n) => n === 1)) break
    }
    assert.deepEqual(subscribed, [1, 1, 1])
    await held.release()
    const lock = await waiting
    const took = Date.now() - t0
    assert.ok(took < 5000, `woken by the release, not the 10 s retryDelay: ${took} ms`)
    // The first, the one after subscribing, then the wake-ups' (the first
    // server's word can come before the others' deletes).
    assert.ok(lock.attempts.length >= 3 && lock.attempts.length <= 6, `attempts: ${lock.attempts.length}`)
    // Woken by the first server's word, its attempt can reach a server before
    // the holder's delete does: a majority is what it needs and gets.
    for (const k of keys) {
      const held = (await Promise.all(checks.map((x) => x.get(k)))).filter((v) => v === lock.value).length
      assert.ok(held >= 2, `${k} held on ${held} of 3`)
    }
    await lock.release()
    for (const k of keys) assert.equal(await check.get(k), null)
    // A releaseScript transform cannot be honoured with it: refused.
    assert.throws(() => new Ours([client(servers[0].port)], { wakeOnRelease: true }, { releaseScript: (s) => s }), { name: 'TypeError', message: /releaseScript/ })
    const transformed = new Ours([client(servers[0].port)], {}, { releaseScript: (s) => s })
    await assert.rejects(transformed.acquire([fresh('wake')], 1000, { wakeOnRelease: true }), { name: 'TypeError', message: /releaseScript/ })
    assert.throws(() => new Ours([client(servers[0].port)], { wakeOnRelease: 1 }), TypeError)
  } finally {
    await Promise.all(checks.map((x) => x.quit()))
  }
})

test('using, beyond node-redlock 5: a key taken over by another owner is told as taken, not as expired or deleted', async () => {
  for (const n of [1, 3]) {
    const cs = servers.slice(0, n).map((s) => client(s.port))
    const admins = servers.slice(0, n).map((s) => admin(s.port))
    const redlock = new Ours(cs, { automaticExtensionThreshold: 200 })
    const key = fresh('taken')
    let out = null
    const err = await rejection(redlock.using([key], 900, async (signal) => {
      for (const a of admins) await a.set(key, 'someone else', 'PX', 5000)
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
      out = { name: signal.error.name, reason: signal.error.reason, message: signal.error.message }
    }))
    for (const a of admins) await a.quit()
    assert.equal(err.name, 'ExecutionError')
    assert.equal(out.name, 'LockLostError')
    assert.equal(out.reason, 'taken', `${n} server(s): ${out.message}`)
    assert.match(out.message, /another owner/)
  }
})
