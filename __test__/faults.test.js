'use strict'

/**
 * Trust under faults, against real redis-server processes: restarts while
 * locks are held and acquires wait, connections cut without a clean close
 * (through a TCP proxy), slow Redis and the connect/command timeouts, SCRIPT
 * FLUSH, keys evicted or overwritten by someone else, binary-safe keys and
 * token format. Every call in flight must settle, with the right error
 * class, within a bounded time.
 */

const { describe, test, before, after } = require('node:test')
const assert = require('node:assert')
const { startRedis, admin } = require('./helpers/redis')
const { sleep, settle, assertFailed } = require('./helpers/wait')
const { startProxy } = require('./helpers/proxy')
const redislock = require('..')
const { LockAcquisitionError, LockReleaseError, LockExtendError } = redislock

const DEFAULT_TIMEOUT = 2000
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** Tries a fresh acquire+release every `everyMs` until one works. */
async function timeToRecover (url, limitMs, everyMs = 25) {
  const t0 = Date.now()
  let attempts = 0
  while (Date.now() - t0 < limitMs) {
    attempts++
    const lock = redislock.createLock(url, { timeout: 5000 })
    try {
      await lock.acquire(`recover:${attempts}:${Math.random()}`)
      await lock.release()
      return { ms: Date.now() - t0, attempts }
    } catch (err) {
      assert.ok(err instanceof LockAcquisitionError || err instanceof LockReleaseError, `unexpected ${err && err.name}`)
      await sleep(everyMs)
    }
  }
  assert.fail(`no call succeeded within ${limitMs} ms`)
}

describe('Redis restarts', () => {
  let srv
  before(async () => { srv = await startRedis() })
  after(async () => { if (srv) await srv.stop() })

  test('calls in flight and while down fail with the right class; calls after the restart succeed', async () => {
    const url = srv.url
    const holder = redislock.createLock(url, { timeout: 10000 })
    await holder.acquire('restart:held')
    const waiters = [1, 2, 3].map(() => redislock.createLock(url, { retries: -1, delay: 50 }))
    const waiting = waiters.map((w) => settle(w.acquire('restart:held'), 3 * DEFAULT_TIMEOUT + 1000))
    await sleep(200)

    await srv.stop(true) // SIGKILL: no clean shutdown
    const down = Date.now()
    const results = await Promise.all(waiting)
    for (const r of results) {
      assertFailed(r, LockAcquisitionError, 'waiting acquire (retries -1)')
      assert.match(r.err.cause.code, /^ERR_REDIS_(CONNECTION|TIMEOUT)$/)
    }
    const waitersSettledMs = Date.now() - down
    assertFailed(await settle(holder.extend(5000), 3 * DEFAULT_TIMEOUT), LockExtendError, 'extend while down')
    assertFailed(await settle(holder.release(), 3 * DEFAULT_TIMEOUT), LockReleaseError, 'release while down')
    assert.strictEqual(holder._locked, true, 'a release that failed leaves the lock marked held')
    const fresh = redislock.createLock(url)
    assertFailed(await settle(fresh.acquire('restart:other'), 3 * DEFAULT_TIMEOUT), LockAcquisitionError, 'acquire while down')

    await srv.start()
    const recovery = await timeToRecover(url, 3 * DEFAULT_TIMEOUT)
    console.log(`# restart: waiters failed ${waitersSettledMs} ms after the kill; first success ${recovery.ms} ms after the server was back (attempt ${recovery.attempts})`)

    // The restarted server lost the key (no persistence): ours is gone.
    const released = await settle(holder.release(), 3 * DEFAULT_TIMEOUT)
    assertFailed(released, LockReleaseError, 'release after restart')
    assert.match(released.err.message, /had expired/)
    await waiters[0].acquire('restart:held')
    await waiters[0].release()
  })

  test('a restart with no pause: waiters keep waiting or fail, never hang', async () => {
    const url = srv.url
    const holder = redislock.createLock(url, { timeout: 1000 })
    await holder.acquire('restart2:held')
    const waiter = redislock.createLock(url, { retries: -1, delay: 50 })
    const waiting = settle(waiter.acquire('restart2:held'), 3 * DEFAULT_TIMEOUT + 2000)
    await sleep(100)
    await srv.restart()
    const r = await waiting
    if (r.err) assertFailed(r, LockAcquisitionError, 'waiter across a restart')
    else await waiter.release()
    await timeToRecover(url, 3 * DEFAULT_TIMEOUT)
  })
})

describe('connections cut without a clean close (proxy)', () => {
  const T = 400
  let srv, proxy
  before(async () => {
    srv = await startRedis()
    proxy = await startProxy(srv.port)
  })
  after(async () => {
    if (proxy) await proxy.close()
    if (srv) await srv.stop()
  })

  const opts = () => ({ host: '127.0.0.1', port: proxy.port, commandTimeout: T, connectTimeout: T })

  test('blackhole: every call in flight settles within the command timeout; calls work again once it forwards', async () => {
    const holder = redislock.createLock(opts(), { timeout: 10000 })
    const other = redislock.createLock(opts(), { timeout: 10000 })
    await holder.acquire('bh:held')
    await other.acquire('bh:other')
    proxy.blackhole()
    const waiter = redislock.createLock(opts(), { retries: -1, delay: 20 })
    const limit = 3 * T + 500
    const [a, w, e, r] = await Promise.all([
      settle(redislock.createLock(opts()).acquire('bh:new'), limit),
      settle(waiter.acquire('bh:held'), limit),
      settle(holder.extend(5000), limit),
      settle(other.release(), limit)
    ])
    assertFailed(a, LockAcquisitionError, 'acquire')
    assertFailed(w, LockAcquisitionError, 'waiting acquire')
    assertFailed(e, LockExtendError, 'extend')
    assertFailed(r, LockReleaseError, 'release')
    for (const x of [a, w, e, r]) {
      assert.match(x.err.cause.code, /^ERR_REDIS_(TIMEOUT|CONNECTION)$/)
      assert.ok(x.ms <= limit, `settled in ${x.ms} ms`)
    }
    console.log(`# blackhole: settled in ${[a, w, e, r].map((x) => x.ms).join(', ')} ms (commandTimeout ${T})`)
    proxy.forward()
    const recovery = await timeToRecover(opts(), 3 * T + 2000)
    console.log(`# blackhole lifted: first success after ${recovery.ms} ms`)
    await holder.release()
  })

  test('half-open socket: after one timeout the next call uses a fresh connection', async () => {
    const lock = redislock.createLock(opts(), { timeout: 10000 })
    await lock.acquire('half:1')
    const acceptedBefore = proxy.accepted
    proxy.strand() // the current socket passes nothing, ever again
    const first = await settle(lock.extend(5000), 3 * T)
    assertFailed(first, LockExtendError, 'extend on the stranded socket')
    assert.strictEqual(first.err.cause.code, 'ERR_REDIS_TIMEOUT')
    const t0 = Date.now()
    await lock.extend(5000) // must not time out again on the dead socket
    await lock.release()
    const ms = Date.now() - t0
    assert.ok(proxy.accepted > acceptedBefore, 'a new connection was opened')
    assert.ok(ms < T, `second call took ${ms} ms`)
    console.log(`# half-open: first call timed out after ${first.ms} ms, next call succeeded in ${ms} ms on a new socket`)
  })

  test('connections reset (RST) mid-use: calls settle, later calls succeed', async () => {
    const locks = Array.from({ length: 20 }, () => redislock.createLock(opts(), { timeout: 10000, retries: 3, delay: 20 }))
    const inflight = locks.map((l, i) => settle(l.acquire(`rst:${i}`), 3 * T + 1000))
    proxy.drop(true)
    const results = await Promise.all(inflight)
    for (const r of results) {
      if (r.err) assertFailed(r, LockAcquisitionError, 'acquire across a reset')
    }
    await timeToRecover(opts(), 3 * T + 1000)
    for (const l of locks) if (l._locked) await l.release()
  })

  test('connectTimeout applies (options object, URL query) and defaults to 2000 ms', async () => {
    proxy.blackhole() // accepts TCP, never answers: SELECT during connect hangs
    try {
      const viaOptions = await settle(redislock.createLock({ ...opts(), db: 1, connectTimeout: 300 }).acquire('ct'), 3000)
      assertFailed(viaOptions, LockAcquisitionError, 'connect through a blackhole')
      assert.match(viaOptions.err.message, /timed out after 300 ms/)
      assert.ok(viaOptions.ms >= 250 && viaOptions.ms < 900, `${viaOptions.ms} ms`)

      const viaUrl = await settle(redislock.createLock(`redis://127.0.0.1:${proxy.port}/2?connectTimeout=350`).acquire('ct'), 3000)
      assertFailed(viaUrl, LockAcquisitionError, 'connect through a blackhole (URL)')
      assert.match(viaUrl.err.message, /timed out after 350 ms/)

      const byDefault = await settle(redislock.createLock({ port: proxy.port, db: 3 }).acquire('ct'), 3 * DEFAULT_TIMEOUT)
      assertFailed(byDefault, LockAcquisitionError, 'connect through a blackhole (default)')
      assert.match(byDefault.err.message, /timed out after 2000 ms/)
      assert.ok(byDefault.ms >= 1900 && byDefault.ms < 3000, `${byDefault.ms} ms`)
      console.log(`# connectTimeout: 300 -> ${viaOptions.ms} ms, 350 (URL) -> ${viaUrl.ms} ms, default -> ${byDefault.ms} ms`)
    } finally {
      proxy.forward()
      proxy.drop()
    }
  })

  test('a delayed network: acquire fails at the command timeout and its SET is cleaned up', async () => {
    const lock = redislock.createLock({ ...opts(), db: 4 }, { timeout: 30000 })
    await lock.acquire('delay:warm') // connect while the network is fast
    await lock.release()
    const flusher = admin(srv.port)
    await flusher.script('FLUSH')
    flusher.disconnect()
    proxy.delay(3 * T)
    const r = await settle(lock.acquire('delay:k'), 4 * T)
    assertFailed(r, LockAcquisitionError, 'acquire over a slow link')
    assert.strictEqual(r.err.cause.code, 'ERR_REDIS_TIMEOUT')
    await sleep(3 * T + 300) // the SET and the clean-up both arrive
    proxy.forward()
    const check = admin(srv.port)
    try {
      await check.select(4)
      assert.strictEqual(await check.exists('delay:k'), 0, 'the timed-out SET was undone')
    } finally {
      check.disconnect()
    }
  })
})

describe('slow Redis, scripts and other parties', () => {
  let srv, raw
  before(async () => {
    srv = await startRedis({ args: ['--enable-debug-command', 'yes'] })
    raw = admin(srv.port)
  })
  after(async () => {
    if (raw) raw.disconnect()
    if (srv) await srv.stop()
  })

  /** Stalls the server for `seconds`; resolves once it is asleep, to {done}. */
  async function debugSleep (seconds) {
    const sleeper = admin(srv.port)
    await sleeper.ping()
    const done = sleeper.call('DEBUG', 'SLEEP', String(seconds)).finally(() => sleeper.disconnect())
    await sleep(30)
    return { done }
  }

  test('command timeout defaults to 2000 ms', async () => {
    const lock = redislock.createLock(`redis://127.0.0.1:${srv.port}/5`, { timeout: 10000 })
    await lock.acquire('slow:default')
    const asleep = await debugSleep(2.7)
    const r = await settle(lock.extend(5000), 3 * DEFAULT_TIMEOUT)
    assertFailed(r, LockExtendError, 'extend during DEBUG SLEEP')
    assert.strictEqual(r.err.cause.code, 'ERR_REDIS_TIMEOUT')
    assert.ok(r.ms >= 1900 && r.ms < 2600, `extend timed out after ${r.ms} ms`)
    await asleep.done
    console.log(`# default command timeout: extend failed after ${r.ms} ms`)
    await lock.release()
  })

  for (const [how, client] of [
    ['options object', (port) => ({ port, db: 6, commandTimeout: 300 })],
    ['URL query', (port) => `redis://127.0.0.1:${port}/7?commandTimeout=300`]
  ]) {
    test(`commandTimeout via ${how}: acquire fails at it and a SET that landed late is released`, async () => {
      const lock = redislock.createLock(client(srv.port), { timeout: 60000 })
      await lock.acquire('slow:warm')
      await lock.release()
      await raw.script('FLUSH') // the clean-up must not depend on the script cache
      const asleep = await debugSleep(1)
      const r = await settle(lock.acquire('slow:k'), 3 * 300 + 200)
      assertFailed(r, LockAcquisitionError, 'acquire during DEBUG SLEEP')
      assert.strictEqual(r.err.cause.code, 'ERR_REDIS_TIMEOUT')
      assert.ok(r.ms >= 250, `${r.ms} ms`)
      assert.ok(r.ms < 1000, `acquire waited ${r.ms} ms, past the server's stall`)
      assert.strictEqual(lock._locked, false)
      await asleep.done
      await sleep(50)
      const db = typeof client(0) === 'string' ? 7 : 6
      await raw.select(db)
      assert.strictEqual(await raw.exists('slow:k'), 0, 'the timed-out SET was released')
      await raw.select(0)
      await lock.acquire('slow:k') // and the lock works normally afterwards
      await lock.release()
      console.log(`# commandTimeout 300 (${how}): acquire failed after ${r.ms} ms; key gone after the stall`)
    })
  }

  test('SCRIPT FLUSH between calls: extend and release still work', async () => {
    const lock = redislock.createLock(srv.url, { timeout: 5000 })
    await lock.acquire('flush:k')
    await raw.script('FLUSH')
    await lock.extend(60000)
    const pttl = await raw.pttl('flush:k')
    assert.ok(pttl > 50000, `pttl ${pttl}`)
    await raw.script('FLUSH')
    await lock.release()
    assert.strictEqual(await raw.exists('flush:k'), 0)
    await lock.acquire('flush:k')
    await raw.script('FLUSH')
    await lock.release()
    assert.strictEqual(await raw.exists('flush:k'), 0)
  })

  test('a key overwritten by another party: release and extend say "had expired" and leave it alone', async () => {
    const a = redislock.createLock(srv.url, { timeout: 10000 })
    await a.acquire('other:1')
    await raw.set('other:1', 'theirs')
    const r = await settle(a.release(), 3000)
    assertFailed(r, LockReleaseError, 'release')
    assert.strictEqual(r.err.message, 'Lock on "other:1" had expired')
    assert.strictEqual(await raw.get('other:1'), 'theirs')
    assert.strictEqual(a._locked, false)

    const b = redislock.createLock(srv.url, { timeout: 10000 })
    await b.acquire('other:2')
    await raw.set('other:2', 'theirs', 'PX', 100000)
    const e = await settle(b.extend(5000), 3000)
    assertFailed(e, LockExtendError, 'extend')
    assert.strictEqual(e.err.message, 'Lock on "other:2" had expired')
    assert.strictEqual(await raw.get('other:2'), 'theirs')
    assert.ok(await raw.pttl('other:2') > 90000, 'their TTL untouched')
    assert.strictEqual(b._locked, false)

    // Someone else acquired it after ours expired.
    const c = redislock.createLock(srv.url, { timeout: 50 })
    const d = redislock.createLock(srv.url, { timeout: 10000 })
    await c.acquire('other:3')
    await sleep(80)
    await d.acquire('other:3')
    assert.match((await settle(c.release(), 3000)).err.message, /had expired/)
    assert.match((await settle(c.extend(100), 3000)).err.message, /Lock has not been acquired/)
    assert.strictEqual(await raw.get('other:3'), d._id)
    await d.release()
  })

  test('a key evicted (deleted): release and extend say "had expired" and do not recreate it', async () => {
    const a = redislock.createLock(srv.url, { timeout: 10000 })
    await a.acquire('evict:1')
    await raw.del('evict:1')
    const e = await settle(a.extend(5000), 3000)
    assertFailed(e, LockExtendError, 'extend')
    assert.match(e.err.message, /had expired/)
    assert.strictEqual(await raw.exists('evict:1'), 0)
    await a.acquire('evict:1')
    await raw.del('evict:1')
    const r = await settle(a.release(), 3000)
    assertFailed(r, LockReleaseError, 'release')
    assert.match(r.err.message, /had expired/)
    assert.strictEqual(await raw.exists('evict:1'), 0)
  })

  test('keys are binary-safe arguments, never spliced into a script', async () => {
    await raw.flushdb()
    await raw.set('canary', 'alive')
    const keys = [
      'quote"double', "quote'single", 'back\\slash',
      "]] return redis.call('FLUSHALL') --",
      "'); redis.call('FLUSHALL'); ('",
      'end return 1 --',
      '[[long]] [==[string]==]',
      'line1\nline2\r\nline3',
      'nul\u0000inside', '\u0000', 'trailing\u0000',
      '*3\r\n$3\r\nDEL\r\n$6\r\ncanary\r\n',
      '%s%n%x', '${jndi}', 'ключ 🔒 鍵 \u202e',
      'x'.repeat(100000)
    ]
    for (const key of keys) {
      const lock = redislock.createLock(srv.url, { timeout: 10000 })
      await lock.acquire(key)
      assert.strictEqual(await raw.get(key), lock._id, `stored under the exact key ${JSON.stringify(key.slice(0, 40))}`)
      await lock.extend(20000)
      assert.ok(await raw.pttl(key) > 15000)
      const other = redislock.createLock(srv.url)
      await assert.rejects(other.acquire(key), LockAcquisitionError)
      await lock.release()
      assert.strictEqual(await raw.exists(key), 0)
    }
    assert.strictEqual(await raw.get('canary'), 'alive')
    assert.strictEqual(await raw.dbsize(), 1)
  })

  test('tokens are UUID v4 and are what Redis holds', async () => {
    const seen = new Set()
    for (let i = 0; i < 200; i++) {
      const lock = redislock.createLock(srv.url)
      assert.match(lock._id, UUID_V4)
      assert.strictEqual(lock._id.length, 36)
      seen.add(lock._id)
    }
    assert.strictEqual(seen.size, 200)
    const lock = redislock.createLock(srv.url)
    await lock.acquire('token:k')
    assert.strictEqual(await raw.get('token:k'), lock._id)
    await lock.release()
  })
})

test('a connection reset under a release says "Connection reset by peer", not a libuv poll status', async () => {
  const server = await startRedis()
  const proxy = await startProxy(server.port)
  try {
    const lock = redislock.createLock(`redis://127.0.0.1:${proxy.port}`, { retries: 0 })
    const key = `faults:reset:${process.pid}`
    await lock.acquire(key)
    // Every connection that carries the release is reset, the retry's too.
    proxy.holdBack(new RegExp(key), 2000)
    const releasing = lock.release().then(() => null, (err) => err)
    for (let i = 0; i < 8; i++) {
      await sleep(50)
      proxy.drop(true)
    }
    proxy.forward()
    const err = await releasing
    assert.ok(err instanceof LockReleaseError, String(err))
    assert.doesNotMatch(err.message, /poll error/)
    assert.match(err.message, /Connection reset by peer/)
  } finally {
    await proxy.close()
    await server.stop()
  }
})
