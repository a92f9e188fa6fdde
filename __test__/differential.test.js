'use strict'

/**
 * The drop-in promise: each scenario runs against redislock@1.3.0 and
 * against redislock-rs, both handed the same kind of redis@3 client, and
 * the observable outcomes must be identical: results, error classes and
 * messages, lock state, Redis contents and TTLs, attempts and waiting time.
 */

const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const redis3 = require('redis3')
const co = require('co')
const { useRedis, serverKind } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')

const IMPLS = [
  { name: 'redislock', lib: require('redislock') },
  { name: 'redislock-rs', lib: require('..') }
]

const clients = []
// Registered before useRedis's own hook, so the clients quit before the server stops.
after(async () => {
  await Promise.all(clients.map((c) => new Promise((resolve) => c.quit(() => resolve()))))
})
const redis = useRedis()

function client () {
  const c = redis3.createClient({ port: redis.server.port })
  clients.push(c)
  return c
}

/** A raw client for checking Redis contents, promisified by hand. */
function call (c, ...args) {
  return new Promise((resolve, reject) => c.send_command(args[0], args.slice(1), (err, res) => err ? reject(err) : resolve(res)))
}

async function settle (promise) {
  try {
    const value = await promise
    return { ok: true, value }
  } catch (err) {
    return {
      ok: false,
      class: err.constructor.name,
      name: err.name,
      message: err.message,
      isError: err instanceof Error,
      keys: Object.keys(err)
    }
  }
}

function state (lock) {
  return {
    locked: lock._locked,
    key: lock._key,
    idLength: lock._id.length,
    timeout: lock.timeout,
    retries: lock.retries,
    delay: lock.delay
  }
}

function roundTtl (ms, step = 100) {
  return ms < 0 ? ms : Math.ceil(ms / step) * step
}

/**
 * Runs `scenario(lib, ctx)` for both implementations, each on its own key
 * space, and asserts the recorded outcomes are deep-equal.
 */
async function differential (scenario) {
  const outcomes = []
  for (const { name, lib } of IMPLS) {
    const check = client()
    await call(check, 'FLUSHALL')
    await call(check, 'CONFIG', 'RESETSTAT')
    const record = {}
    await scenario(lib, { client: client(), check, record, prefix: 'diff:' })
    outcomes.push({ name, record })
  }
  assert.deepStrictEqual(outcomes[1].record, outcomes[0].record,
    `redislock-rs differs from redislock:\n${JSON.stringify(outcomes, null, 1)}`)
  return outcomes[0].record
}

async function setCalls (check) {
  const info = await call(check, 'INFO', 'commandstats')
  const m = /cmdstat_set:calls=(\d+)/.exec(info)
  return m ? Number(m[1]) : 0
}

test('acquire, extend and release: results, state, Redis contents and TTLs', async () => {
  const rec = await differential(async (lib, { client, check, record }) => {
    const lock = lib.createLock(client, { timeout: 5000 })
    record.initial = state(lock)
    record.acquire = await settle(lock.acquire('diff:a'))
    record.afterAcquire = state(lock)
    record.holder = (await call(check, 'GET', 'diff:a')) === lock._id
    record.ttl = roundTtl(await call(check, 'PTTL', 'diff:a'), 1000)
    record.registry = lib.getAcquiredLocks().includes(lock)
    record.extend = await settle(lock.extend(20000))
    record.ttlAfterExtend = roundTtl(await call(check, 'PTTL', 'diff:a'), 1000)
    record.release = await settle(lock.release())
    record.afterRelease = state(lock)
    record.exists = await call(check, 'EXISTS', 'diff:a')
    record.registryAfter = lib.getAcquiredLocks().includes(lock)
  })
  assert.equal(rec.acquire.ok, true)
  assert.equal(rec.holder, true)
  assert.equal(rec.ttl, 5000)
  assert.equal(rec.ttlAfterExtend, 20000)
  assert.equal(rec.exists, 0)
})

test('state errors: already held, not acquired, bad extend times', async () => {
  const rec = await differential(async (lib, { client, record }) => {
    const lock = lib.createLock(client)
    record.releaseFirst = await settle(lock.release())
    record.extendFirst = await settle(lock.extend(100))
    for (const t of [0, 1.5, '100', NaN, undefined, null, {}]) {
      record['extend ' + String(t)] = await settle(lock.extend(t))
    }
    await lock.acquire('diff:b')
    record.again = await settle(lock.acquire('diff:b'))
    record.otherKey = await settle(lock.acquire('diff:b2'))
    record.state = state(lock)
    await lock.release()
  })
  assert.equal(rec.again.message, 'Lock already held')
  assert.equal(rec.releaseFirst.message, 'Lock has not been acquired')
  assert.equal(rec['extend 0'].message, 'Int time is required to extend lock')
})

test('contended key: retries, attempts and waiting time', async () => {
  const outcomes = []
  const rec = await differential(async (lib, { client, check, record }) => {
    const holder = lib.createLock(client)
    await holder.acquire('diff:c')
    const waiter = lib.createLock(client, { retries: 3, delay: 60 })
    const before = await setCalls(check)
    const started = Date.now()
    record.result = await settle(waiter.acquire('diff:c'))
    const waited = Date.now() - started
    outcomes.push(waited)
    record.attempts = (await setCalls(check)) - before
    record.waiter = state(waiter)
    record.stillHolder = (await call(check, 'GET', 'diff:c')) === holder._id
    await holder.release()
  })
  assert.equal(rec.result.message, 'Could not acquire lock on "diff:c"')
  assert.equal(rec.attempts, 4)
  // Both waited about 3 x 60 ms; of the same order (a loaded machine
  // stretches either).
  assert.ok(outcomes[0] >= 170 && outcomes[1] >= 170, `waited ${outcomes}`)
  assert.ok(Math.abs(outcomes[0] - outcomes[1]) < 300, `waited ${outcomes}`)
})

test('retries: -1 waits until the holder releases', async () => {
  await differential(async (lib, { client, record }) => {
    const holder = lib.createLock(client)
    await holder.acquire('diff:d')
    const waiter = lib.createLock(client, { retries: -1, delay: 10 })
    const pending = settle(waiter.acquire('diff:d'))
    await sleep(80)
    record.waitingState = state(waiter)
    await holder.release()
    record.result = await pending
    record.state = state(waiter)
    await waiter.release()
  })
})

test('expired keys: release and extend report it and reset the state', async () => {
  const rec = await differential(async (lib, { client, check, record }) => {
    const a = lib.createLock(client, { timeout: 50 })
    await a.acquire('diff:e')
    await sleep(120)
    record.registryKeepsExpired = lib.getAcquiredLocks().includes(a)
    record.release = await settle(a.release())
    record.afterRelease = state(a)
    record.registryAfterRelease = lib.getAcquiredLocks().includes(a)

    const b = lib.createLock(client, { timeout: 50 })
    await b.acquire('diff:e')
    await sleep(120)
    record.extend = await settle(b.extend(1000))
    record.afterExtend = state(b)
    record.registryAfterExtend = lib.getAcquiredLocks().includes(b)

    // Someone else's lock is never deleted or extended.
    const c = lib.createLock(client, { timeout: 10000 })
    await c.acquire('diff:f')
    await call(check, 'SET', 'diff:f', 'someone-else', 'PX', '30000')
    record.releaseStolen = await settle(c.release())
    record.stolenValue = await call(check, 'GET', 'diff:f')
    record.stolenTtl = roundTtl(await call(check, 'PTTL', 'diff:f'), 1000)
  })
  assert.equal(rec.release.message, 'Lock on "diff:e" had expired')
  assert.equal(rec.registryKeepsExpired, true)
  assert.equal(rec.stolenValue, 'someone-else')
})

test('option parsing and setDefaults', async () => {
  await differential(async (lib, { client, record }) => {
    record.parsed = state(lib.createLock(client, { timeout: '2500', retries: 'x', delay: 7.9, other: 1 }))
    record.defaults = state(lib.createLock(client))
    lib.setDefaults({ timeout: '3000', retries: 2, delay: null, foo: 'bar' })
    record.afterSetDefaults = state(lib.createLock(client))
    record.explicitWins = state(lib.createLock(client, { retries: 5 }))
    lib.setDefaults({ timeout: 10000, retries: 0, delay: 50 })
    record.restored = state(lib.createLock(client))
  })
})

test('callbacks are called once with (null) or (err)', async () => {
  await differential(async (lib, { client, record }) => {
    const lock = lib.createLock(client)
    const calls = (fn) => new Promise((resolve) => {
      const seen = []
      fn((...args) => {
        seen.push(args.map((a) => a instanceof Error ? a.name + ': ' + a.message : a))
        setTimeout(() => resolve(seen), 30)
      })
    })
    record.acquire = await calls((cb) => lock.acquire('diff:g', cb))
    record.again = await calls((cb) => lock.acquire('diff:g', cb))
    record.extend = await calls((cb) => lock.extend(5000, cb))
    record.badExtend = await calls((cb) => lock.extend('5', cb))
    record.release = await calls((cb) => lock.release(cb))
    record.releaseAgain = await calls((cb) => lock.release(cb))
  })
})

test('error objects look the same: class, name, message, enumerable fields', async () => {
  await differential(async (lib, { client, record }) => {
    const lock = lib.createLock(client)
    const err = await lock.release().catch((e) => e)
    record.isError = err instanceof Error
    record.isClass = err instanceof lib.LockReleaseError
    record.keys = Object.keys(err)
    record.json = JSON.parse(JSON.stringify(err))
    record.toString = String(err)
    const direct = new lib.LockAcquisitionError('x')
    record.direct = { name: direct.name, message: direct.message, keys: Object.keys(direct) }
  })
  const ours = await require('..').createLock('redis://127.0.0.1:' + redis.server.port).release().catch((e) => e)
  assert.match(ours.stack, /^LockReleaseError: Lock has not been acquired\n/)
})

test('bluebird usage from the README: filtered catch, nodeify, co generators', async () => {
  await differential(async (lib, { client, record }) => {
    const a = lib.createLock(client)
    const b = lib.createLock(client)
    await a.acquire('diff:h')
    record.filtered = await b.acquire('diff:h')
      .then(() => 'acquired')
      .catch(lib.LockReleaseError, () => 'wrong class')
      .catch(lib.LockAcquisitionError, (e) => 'filtered: ' + e.message)
    record.nodeify = await new Promise((resolve) => b.acquire('diff:h').nodeify((err) => resolve(err && err.message)))
    record.co = await co(function * () {
      try {
        yield b.acquire('diff:h')
        return 'acquired'
      } catch (e) {
        yield a.release()
        yield b.acquire('diff:h')
        yield b.release()
        return 'co: ' + e.name
      }
    })
  })
})

test('Redis errors are wrapped into the operation\'s error class', async () => {
  await differential(async (lib, { client, check, record }) => {
    const lock = lib.createLock(client)
    await lock.acquire('diff:i')
    await call(check, 'DEL', 'diff:i')
    await call(check, 'HSET', 'diff:i', 'f', 'v')
    const r = await settle(lock.release())
    record.release = { class: r.class, wrongType: /WRONGTYPE/.test(r.message) }
    record.state = state(lock)
    const e = await settle(lock.extend(100))
    record.extend = { class: e.class, wrongType: /WRONGTYPE/.test(e.message) }
  })
})

// On Valkey 9 ours releases and extends without a script (DELIFEQ, SET …
// IFEQ; lua-free.test.js), so only the outcome is compared there.
test('after SCRIPT FLUSH: the same commands as redislock (EVALSHA, then EVAL on NOSCRIPT; on Valkey 9 the same outcome)', async () => {
  const luaFree = serverKind() === 'valkey'
  const scriptCalls = async (check) => {
    const info = await call(check, 'INFO', 'commandstats')
    const out = {}
    for (const cmd of ['set', 'evalsha', 'eval', 'script']) {
      const m = new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info)
      out[cmd] = m ? Number(m[1]) : 0
    }
    return out
  }
  const rec = await differential(async (lib, { client, check, record }) => {
    const lock = lib.createLock(client, { timeout: 5000 })
    await lock.acquire('diff:flush')
    await call(check, 'SCRIPT', 'FLUSH')
    await call(check, 'CONFIG', 'RESETSTAT')
    record.extend = await settle(lock.extend(20000))
    record.release = await settle(lock.release())
    if (!luaFree) record.calls = await scriptCalls(check)
    record.exists = await call(check, 'EXISTS', 'diff:flush')
  })
  assert.equal(rec.release.ok, true)
  assert.equal(rec.exists, 0)
  if (!luaFree) assert.ok(rec.calls.eval >= 1, JSON.stringify(rec.calls))
})
