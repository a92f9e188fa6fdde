'use strict'

/**
 * Hostile input, property-based (fast-check): random values of every
 * JavaScript type thrown at every public function and option. Each call
 * must either work as redislock would, or reject/throw with the right class
 * (TypeError for an unusable client in createLock; LockAcquisitionError,
 * LockReleaseError, LockExtendError from the lock's methods), and never
 * crash the process, hang or leave a lock behind.
 */

const { describe, test, before, after } = require('node:test')
const assert = require('node:assert')
const util = require('util')
const fc = require('fast-check')
const { useRedis } = require('./helpers/redis')
const redislock = require('..')
const { LockAcquisitionError, LockReleaseError, LockExtendError } = redislock

const RUNS = Number(process.env.HOSTILE_RUNS) || 250
const SETTLE_LIMIT_MS = 5000

/** What a user's getter, proxy trap or toString throws. */
class Sentinel extends Error {}

function throwingGetters () {
  const o = {}
  for (const k of ['host', 'port', 'url', 'db', 'password', 'username', 'tls', 'options', 'connection_options',
    'sendCommand', 'send_command', 'timeout', 'retries', 'delay', 'constructor', 'then', 'ca', 'connectTimeout']) {
    Object.defineProperty(o, k, { enumerable: true, get () { throw new Sentinel(`getter ${k}`) } })
  }
  return o
}

/**
 * A hostile object, built only when the call is made: fast-check itself
 * inspects generated values, and a throwing proxy would trip it up.
 */
class Hostile {
  constructor (kind) { this.kind = kind }
  toString () { return `Hostile(${this.kind})` }
}

const hostileObjects = fc.constantFrom(
  'getters', 'proxy', 'toPrimitive', 'frozen-null-proto', 'cyclic', 'array-like', 'revoked', 'date', 'regexp', 'map', 'buffer', 'typed'
).map((kind) => new Hostile(kind))

/** The value to pass: a Hostile placeholder becomes the real thing. */
function make (value) {
  if (!(value instanceof Hostile)) return value
  switch (value.kind) {
    case 'getters': return throwingGetters()
    case 'proxy': return new Proxy({}, {
      get () { throw new Sentinel('proxy get') },
      has () { throw new Sentinel('proxy has') },
      ownKeys () { throw new Sentinel('proxy ownKeys') },
      getOwnPropertyDescriptor () { throw new Sentinel('proxy gopd') },
      getPrototypeOf () { throw new Sentinel('proxy proto') }
    })
    case 'toPrimitive': return { [Symbol.toPrimitive] () { throw new Sentinel('toPrimitive') }, toString () { throw new Sentinel('toString') }, valueOf () { throw new Sentinel('valueOf') } }
    case 'frozen-null-proto': return Object.freeze(Object.create(null))
    case 'cyclic': { const o = { host: '127.0.0.1' }; o.self = o; o.tls = o; return o }
    case 'array-like': return { length: 3, 0: 'a', 1: 'b' }
    case 'revoked': { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy }
    case 'date': return new Date(NaN)
    case 'regexp': return /redis:\/\//
    case 'map': return new Map([['host', '127.0.0.1']])
    case 'buffer': return Buffer.from('redis://127.0.0.1')
    default: return new Float64Array([NaN, -0])
  }
}

const weirdNumbers = fc.oneof(
  fc.double(), fc.integer(), fc.maxSafeInteger(),
  fc.constantFrom(-0, 0, NaN, Infinity, -Infinity, 2 ** 53, 2 ** 53 + 2, 2 ** 64, Number.MAX_VALUE, Number.MIN_VALUE,
    Number.EPSILON, -1, 1, 1.5, 1e21, 0xffffffff, 0x100000000, -(2 ** 31))
)

const keyStrings = fc.oneof(
  fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary-ascii' }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)) }), // lone surrogates too
  fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '\r\n', "'; DEL x --", '"]] end', '%n', '\ud800', '\udfff\ud800'),
  fc.nat({ max: 200000 }).map((n) => 'k'.repeat(n))
)

const anyValue = fc.oneof(
  { weight: 3, arbitrary: fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true, withBoxedValues: true }) },
  { weight: 2, arbitrary: weirdNumbers },
  { weight: 2, arbitrary: keyStrings },
  { weight: 2, arbitrary: hostileObjects },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, true, false, Symbol('s'), () => {}, async () => {}, 10n, -1n, function * () {}) }
)

const numberish = fc.oneof(weirdNumbers, anyValue, fc.constantFrom('100', '-1', '1e3', '0x10', ' 7 ', 'Infinity'))

/**
 * Runs `fn`, classifying the outcome: {sync} for a synchronous throw,
 * {value} or {err} once its promise settles; fails if still pending after
 * SETTLE_LIMIT_MS.
 */
async function outcome (fn) {
  let p
  try {
    p = fn()
  } catch (err) {
    return { sync: err }
  }
  if (!p || typeof p.then !== 'function') return { value: p, notPromise: true }
  let timer
  const r = await Promise.race([
    p.then((value) => ({ value }), (err) => ({ err })),
    new Promise((resolve) => { timer = setTimeout(() => resolve({ pending: true }), SETTLE_LIMIT_MS) })
  ])
  clearTimeout(timer)
  assert.ok(!r.pending, 'a call is still pending')
  return r
}

function expectClass (r, ErrorClass, what) {
  assert.ok(!r.sync, `${what} threw synchronously: ${r.sync && r.sync.name}: ${r.sync && r.sync.message}`)
  assert.ok(!r.notPromise, `${what} did not return a promise`)
  if (r.err) assert.ok(r.err instanceof ErrorClass, `${what} rejected with ${r.err && r.err.name}: ${r.err && r.err.message}`)
}

/** A callback that records its calls; checks the node-style contract. */
function recorder () {
  const calls = []
  const fn = function (err, value) { calls.push([err, value]) }
  return { fn, calls }
}

describe('hostile input (property-based)', () => {
  const redis = useRedis()
  let srv, raw
  let cases = 0
  let unique = 0
  const savedDefaults = {}
  before(async () => {
    srv = redis.server
    raw = redis.check
    Object.assign(savedDefaults, require('../lib/redislock/lock')._defaults)
  })
  after(async () => {
    Object.assign(require('../lib/redislock/lock')._defaults, savedDefaults)
    console.log(`# hostile input: ${cases} cases run`)
  })
  const freshKey = () => `hostile:${process.pid}:${unique++}`
  const client = () => ({ port: srv.port, host: '127.0.0.1' })

  test('createLock(client, options): a Lock, a TypeError, or the error a hostile options object throws', async () => {
    await fc.assert(fc.asyncProperty(anyValue, fc.option(anyValue, { nil: undefined }), async (c, o) => {
      cases++
      const r = await outcome(() => redislock.createLock(make(c), make(o)))
      if (r.sync) {
        assert.ok(r.sync instanceof TypeError || r.sync instanceof Sentinel,
          `createLock threw ${r.sync && r.sync.name}: ${r.sync && r.sync.message}`)
        return
      }
      const lock = r.value
      assert.ok(lock && typeof lock.acquire === 'function')
      assert.match(lock._id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      for (const k of ['timeout', 'retries', 'delay']) assert.ok(Number.isInteger(lock[k]) || Number.isNaN(lock[k]), `${k}=${lock[k]}`)
    }), { numRuns: RUNS * 2 })
  })

  test('a client that points nowhere usable: acquire rejects with LockAcquisitionError, never hangs', async () => {
    const targets = fc.oneof(
      fc.record({ host: fc.constantFrom('127.0.0.1', 'localhost', '::1', '0.0.0.0'), port: fc.constantFrom(1, 9, 65535), connectTimeout: fc.constantFrom(200, 300) }),
      fc.record({ url: fc.constantFrom('redis://127.0.0.1:1', 'redis://[::1]:9/0', 'rediss://127.0.0.1:1'), connectTimeout: fc.constant(300) }),
      fc.record({ host: fc.constant('127.0.0.1'), port: fc.constant(0), db: weirdNumbers })
    )
    await fc.assert(fc.asyncProperty(targets, keyStrings, async (c, key) => {
      cases++
      let lock
      try {
        lock = redislock.createLock(c)
      } catch (err) {
        assert.ok(err instanceof TypeError, `${err.name}: ${err.message}`)
        return
      }
      const r = await outcome(() => lock.acquire(key))
      expectClass(r, LockAcquisitionError, 'acquire')
      assert.ok(r.err, 'acquire against a closed port cannot succeed')
    }), { numRuns: Math.ceil(RUNS / 10) })
  })

  test('lock options and setDefaults: acquire works or rejects with LockAcquisitionError', async () => {
    const opts = fc.oneof(
      fc.record({ timeout: numberish, retries: numberish, delay: numberish }, { requiredKeys: [] }),
      anyValue
    )
    const Lock = require('../lib/redislock/lock')
    try {
      await fc.assert(fc.asyncProperty(opts, fc.option(opts, { nil: undefined }), async (o, defaults) => {
        cases++
        Object.assign(Lock._defaults, savedDefaults)
        if (defaults !== undefined) {
          const d = await outcome(() => redislock.setDefaults(make(defaults)))
          if (d.sync) assert.ok(d.sync instanceof Sentinel || d.sync instanceof TypeError, `setDefaults threw ${d.sync && d.sync.name}`)
        }
        let lock
        try {
          lock = redislock.createLock(client(), make(o))
        } catch (err) {
          assert.ok(err instanceof TypeError || err instanceof Sentinel, `createLock threw ${err && err.name}`)
          return
        }
        // A fresh key is free, so even retries: -1 and huge delays return at once.
        const key = freshKey()
        const r = await outcome(() => lock.acquire(key))
        expectClass(r, LockAcquisitionError, 'acquire')
        if (!r.err) {
          assert.strictEqual(lock._locked, true)
          const rel = await outcome(() => lock.release())
          // A tiny timeout may have expired already: that is "had expired".
          expectClass(rel, LockReleaseError, 'release')
          if (rel.err) assert.match(rel.err.message, /had expired/)
        } else {
          assert.strictEqual(lock._locked, false)
          assert.strictEqual(await raw.exists(key), 0, 'a failed acquire left nothing behind')
        }
      }), { numRuns: RUNS })
    } finally {
      Object.assign(Lock._defaults, savedDefaults)
    }
    assert.deepStrictEqual({ ...Lock._defaults }, savedDefaults)
  })

  test('acquire(key, cb), extend(ms, cb), release(cb) with random keys, times and callbacks', async () => {
    const callbacks = fc.oneof(fc.constant(undefined), fc.constant('recorder'), anyValue)
    await fc.assert(fc.asyncProperty(keyStrings, anyValue, numberish, callbacks, callbacks, async (key, oddKey, ms, cb1, cb2) => {
      cases++
      const unique = `${freshKey()}:${key}`
      for (const k of [key, oddKey]) {
        // A key of any type on a free lock: resolves only for non-empty strings.
        const probe = redislock.createLock(client(), { timeout: 60000 })
        const r = await outcome(() => probe.acquire(make(k)))
        expectClass(r, LockAcquisitionError, 'acquire(random key)')
        if (!r.err) {
          assert.ok(typeof k === 'string' && k.length > 0)
          await probe.release()
        } else if (typeof k !== 'string' || k === '') {
          assert.match(r.err.message, /Invalid lock key|already held|Could not acquire/)
        }
      }

      const lock = redislock.createLock(client(), { timeout: 60000 })
      const rec1 = recorder()
      const a = await outcome(() => lock.acquire(unique, cb1 === 'recorder' ? rec1.fn : make(cb1)))
      expectClass(a, LockAcquisitionError, 'acquire')
      assert.ok(!a.err, `acquire of a fresh key failed: ${a.err && a.err.message}`)
      if (cb1 === 'recorder') {
        await new Promise((resolve) => setImmediate(resolve))
        assert.strictEqual(rec1.calls.length, 1)
        assert.strictEqual(rec1.calls[0][0], null)
      }

      const rec2 = recorder()
      const e = await outcome(() => lock.extend(make(ms), cb2 === 'recorder' ? rec2.fn : make(cb2)))
      expectClass(e, LockExtendError, 'extend')
      const validMs = typeof ms === 'number' && Number.isInteger(ms) && ms > 0
      if (!validMs) assert.ok(e.err, `extend(${util.inspect(ms)}) should be refused`)
      if (!e.err) {
        const pttl = await raw.pttl(unique)
        // (+2: Redis's own clock arithmetic can round up by a millisecond.)
        assert.ok(pttl <= ms + 2, `pttl ${pttl} after extend(${ms})`)
        if (ms >= 1000) assert.ok(pttl > 0, `pttl ${pttl} after extend(${ms})`)
      }
      if (cb2 === 'recorder') {
        await new Promise((resolve) => setImmediate(resolve))
        assert.strictEqual(rec2.calls.length, 1)
        assert.strictEqual(rec2.calls[0][0] === null, !e.err)
      }
      if (lock._locked) {
        const rel = await outcome(() => lock.release(cb1 === 'recorder' ? rec1.fn : make(cb1)))
        expectClass(rel, LockReleaseError, 'release')
        // Only a tiny extension may have let it expire first.
        if (rel.err) assert.ok(validMs && ms < 50, `release failed: ${rel.err.message}`)
      }
      assert.strictEqual(await raw.exists(unique), 0)
      // Calls on a released lock reject with their own class.
      expectClass(await outcome(() => lock.release()), LockReleaseError, 'second release')
      expectClass(await outcome(() => lock.extend(1000)), LockExtendError, 'extend after release')
    }), { numRuns: RUNS })
  })

  test('nothing leaks: no lock held, no key left, Redis still answers', async () => {
    assert.deepStrictEqual(redislock.getAcquiredLocks(), [])
    const keys = await raw.keys('hostile:*')
    assert.deepStrictEqual(keys, [])
    const lock = redislock.createLock(client())
    await lock.acquire('after-hostile')
    await lock.release()
  })
})
