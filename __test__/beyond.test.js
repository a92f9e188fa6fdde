'use strict'

/**
 * The redislock face beyond redislock 1.3.0 (autoExtend and the lease
 * keeper, lock.signal and LockLostError, tryAcquire, acquire's AbortSignal,
 * wakeOnRelease, fencing tokens, using, inspect), on real redis-servers
 * started here, with contenders in other processes.
 */

const { test, describe } = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')
const IORedis = require('ioredis')
const redislock = require('redislock')
const R = require('..')
const { useRedis, startRedis } = require('./helpers/redis')
const { startProxy } = require('./helpers/proxy')
const { startMonitor } = require('./helpers/monitor')
const { sleep, block } = require('./helpers/wait')

const redis = useRedis({ args: ['--enable-debug-command', 'yes'] })
let seq = 0
const fresh = (what) => `beyond:${what}:${process.pid}:${seq++}`
const url = () => redis.server.url

/** A contender process (fixtures/contender.js) waiting for `key`. */
function contender (key, holdMs = 50) {
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'contender.js'),
    String(redis.server.port), key, String(holdMs)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const lines = []
  let buf = ''
  const waiters = []
  child.stdout.on('data', (d) => {
    buf += d
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)))
      buf = buf.slice(i + 1)
      for (const w of waiters.splice(0)) w()
    }
  })
  const next = async (pred) => {
    for (;;) {
      const found = lines.find(pred)
      if (found) return found
      await new Promise((resolve) => waiters.push(resolve))
    }
  }
  return {
    ready: () => next((l) => l.ready),
    acquired: () => next((l) => 'acquiredAt' in l),
    exited: new Promise((resolve) => child.once('exit', resolve)),
    kill: () => child.kill()
  }
}

describe('autoExtend: leases kept from Rust', () => {
  test('a lock survives a 3 s blocked event loop with a 1 s timeout, and a contender in another process waits', async () => {
    const key = fresh('stall-kept')
    const lock = R.createLock(url(), { timeout: 1000, autoExtend: true })
    await lock.acquire(key)
    const other = contender(key)
    await other.ready()
    block(3000)
    const pttl = await redis.check.pttl(key)
    assert.ok(pttl > 0, `still held after the stall: PTTL ${pttl}`)
    assert.equal(await redis.check.get(key), lock._id)
    assert.equal(lock.signal.aborted, false)
    assert.ok(lock.remainingMs() > 0)
    await sleep(200)
    const releasedAt = Date.now()
    await lock.release()
    const { acquiredAt } = await other.acquired()
    assert.ok(acquiredAt !== null && acquiredAt >= releasedAt - 5, `the contender got it only after the release (${acquiredAt - releasedAt} ms)`)
    await other.exited
    assert.equal(lock.signal.aborted, false, 'a clean release never aborts the signal')
  })

  test('with maxEventLoopLagMs 500, the same stall stops renewal: the contender gets the lock, the signal says event-loop-stalled', async () => {
    const key = fresh('stall-lost')
    const lock = R.createLock(url(), { timeout: 1000, autoExtend: { maxEventLoopLagMs: 500 } })
    await lock.acquire(key)
    const signal = lock.signal
    const other = contender(key, 5000)
    await other.ready()
    const stallStart = Date.now()
    block(3000)
    const stallEnd = Date.now()
    const { acquiredAt } = await other.acquired()
    assert.ok(acquiredAt !== null && acquiredAt > stallStart && acquiredAt < stallEnd,
      `the contender took the lock during the stall (${acquiredAt - stallStart} ms in)`)
    await sleep(150)
    assert.equal(signal.aborted, true)
    assert.ok(signal.reason instanceof R.LockLostError)
    assert.equal(signal.reason.reason, 'event-loop-stalled')
    assert.equal(lock.remainingMs(), 0)
    // Our release is the usual compare-and-delete: not ours any more.
    await assert.rejects(lock.release(), { name: 'LockReleaseError', message: `Lock on "${key}" had expired` })
    assert.notEqual(await redis.check.get(key), null, "the contender's key was not touched")
    other.kill()
  })

  test('lost signals: deleted (expired), overwritten (taken), maxHoldMs (max-hold), Redis stalled (expired or renewal-failed)', async () => {
    const lost = async (options, act) => {
      const key = fresh('lost')
      const lock = R.createLock(url(), { timeout: 600, ...options })
      await lock.acquire(key)
      const signal = lock.signal
      const reason = new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason.reason)))
      await act(key)
      const got = await Promise.race([reason, sleep(5000).then(() => 'not aborted')])
      return { got, key, lock }
    }
    const deleted = await lost({ autoExtend: true }, (key) => redis.check.del(key))
    assert.equal(deleted.got, 'expired')
    const taken = await lost({ autoExtend: true }, (key) => redis.check.set(key, 'another-owner'))
    assert.equal(taken.got, 'taken')
    assert.equal(await redis.check.get(taken.key), 'another-owner', "never touches another owner's key")
    await assert.rejects(taken.lock.release(), /had expired/)
    assert.equal(await redis.check.get(taken.key), 'another-owner')
    const t0 = Date.now()
    const maxHold = await lost({ autoExtend: { maxHoldMs: 800 } }, () => {})
    assert.equal(maxHold.got, 'max-hold')
    assert.ok(Date.now() - t0 >= 800)
    const stalled = await lost({ autoExtend: true }, async () => {
      const dup = redis.check.duplicate()
      await dup.call('DEBUG', 'SLEEP', '1.5')
      dup.disconnect()
    })
    assert.ok(['expired', 'renewal-failed'].includes(stalled.got), stalled.got)
  })

  test('a release racing a renewal in flight: no lost signal, no renewal after the release, key gone', async () => {
    const proxy = await startProxy(redis.server.port)
    const mon = await startMonitor(redis.server.port)
    try {
      const seen = mon.seen
      for (let i = 0; i < 6; i++) {
        const key = fresh('race')
        const lock = R.createLock({ host: '127.0.0.1', port: proxy.port }, { timeout: 450, autoExtend: true })
        await lock.acquire(key)
        // 75 ms each way: a renewal (every 150 ms) is in flight half the time.
        proxy.delay(75)
        await sleep(150 + i * 37)
        await lock.release()
        proxy.forward()
        await sleep(400)
        assert.equal(lock.signal.aborted, false, 'no lost signal')
        assert.equal(await redis.check.exists(key), 0, 'key gone')
        const mine = seen.filter((args) => args.includes(key)).map((args) => args[0].toLowerCase())
        // By script (`del` inside it) or, on Valkey 9, by DELIFEQ; a renewal
        // is a script with its pexpire, or a SET … IFEQ.
        const del = Math.max(mine.lastIndexOf('del'), mine.lastIndexOf('delifeq'))
        assert.ok(del > 0, `the release deleted it: ${mine}`)
        assert.ok(!mine.slice(del + 1).some((c) => ['pexpire', 'evalsha', 'eval', 'set'].includes(c)),
          `nothing after the release: ${mine}`)
      }
    } finally {
      mon.close()
      await proxy.close()
    }
  })

  test('extend on a kept lock changes the lease the keeper renews to', async () => {
    const key = fresh('extend')
    const lock = R.createLock(url(), { timeout: 600, autoExtend: true })
    await lock.acquire(key)
    await lock.extend(5000)
    await sleep(2100) // several renewal periods of the new lease
    const pttl = await redis.check.pttl(key)
    assert.ok(pttl > 3000, `renewed to the extended lease: ${pttl}`)
    assert.ok(lock.remainingMs() > 3000 && lock.remainingMs() <= 5000, String(lock.remainingMs()))
    await lock.release()
  })
})

describe('tryAcquire and AbortSignal', () => {
  test('tryAcquire makes exactly one attempt: true when taken, false when held, never an error for held', async () => {
    const key = fresh('try')
    // A retry would wait 3 s: the bound tells one attempt from two with
    // room for a loaded machine.
    const a = R.createLock(url(), { retries: 10, delay: 3000 })
    const b = R.createLock(url(), { retries: 10, delay: 3000 })
    assert.equal(await a.tryAcquire(key), true)
    assert.equal(a._locked, true)
    const t0 = Date.now()
    assert.equal(await b.tryAcquire(key), false)
    assert.ok(Date.now() - t0 < 2000, 'no retry')
    assert.equal(b._locked, false)
    await a.release()
    await assert.rejects(b.tryAcquire(''), R.LockAcquisitionError)
  })

  test('aborting a waiting acquire rejects at once with the reason as cause, and the lock is not left held', async () => {
    const key = fresh('abort')
    const holder = R.createLock(url())
    await holder.acquire(key)
    const waiter = R.createLock(url(), { retries: -1, delay: 100 })
    const ac = new AbortController()
    const reason = new Error('shutting down')
    setTimeout(() => ac.abort(reason), 250)
    const err = await waiter.acquire(key, { signal: ac.signal }).catch((e) => e)
    assert.ok(err instanceof R.LockAcquisitionError)
    assert.equal(err.cause, reason)
    await holder.release()
    await sleep(300)
    assert.equal(await redis.check.exists(key), 0, 'the cancelled wait took nothing')
    assert.equal(waiter._locked, false)
    // Callback after the options; an already-aborted signal.
    const done = await new Promise((resolve) => waiter.acquire(key, { signal: AbortSignal.abort('x') }, resolve))
    assert.ok(done instanceof R.LockAcquisitionError)
    assert.equal(done.cause, 'x')
    // A signal that never fires: a normal acquire.
    await waiter.acquire(key, { signal: new AbortController().signal })
    assert.equal(waiter._locked, true)
    await waiter.release()
    await assert.rejects(waiter.acquire(key, { signal: 'nope' }), /AbortSignal/)
  })

  test('bad options are refused with clear errors', () => {
    assert.throws(() => R.createLock(url(), { autoExtend: 'yes' }), TypeError)
    assert.throws(() => R.createLock(url(), { autoExtend: { maxHoldMs: -1 } }), RangeError)
    assert.throws(() => R.createLock(url(), { autoExtend: { maxEventLoopLagMs: 10 } }), RangeError)
    assert.throws(() => R.createLock(url(), { fencing: 1 }), TypeError)
    assert.throws(() => R.createLock(url(), { wakeOnRelease: 'true' }), TypeError)
  })
})

describe('wakeOnRelease', () => {
  test('a waiter wakes on the release, well before its delay', async () => {
    const key = fresh('wake')
    const holder = R.createLock(url(), { wakeOnRelease: true })
    const waiter = R.createLock(url(), { wakeOnRelease: true, retries: 10, delay: 2000 })
    await holder.acquire(key)
    const t0 = Date.now()
    const waiting = waiter.acquire(key)
    await sleep(100)
    await holder.release()
    await waiting
    assert.ok(Date.now() - t0 < 1500, `woken, not polled after 2 s: ${Date.now() - t0} ms`)
    await waiter.release()
  })

  test('a release between the failed SET and the SUBSCRIBE is not missed', async () => {
    const proxy = await startProxy(redis.server.port)
    try {
      const key = fresh('wake-race')
      const holder = R.createLock(url(), { wakeOnRelease: true, timeout: 20000 })
      await holder.acquire(key)
      proxy.holdBack(/\r\nSUBSCRIBE\r\n/i, 400)
      const held = proxy.nextHold()
      const waiter = R.createLock({ host: '127.0.0.1', port: proxy.port }, { wakeOnRelease: true, retries: 3, delay: 5000 })
      const t0 = Date.now()
      const waiting = waiter.acquire(key)
      await held
      await holder.release()
      await waiting
      assert.ok(Date.now() - t0 < 3000, `not left to the 5 s poll: ${Date.now() - t0} ms`)
      await waiter.release()
    } finally {
      await proxy.close()
    }
  })

  test('wake-ups are not retries: announcements do not use up retries, and the wait stays within retries × delay', async () => {
    const key = fresh('wake-budget')
    const holder = R.createLock(url(), { timeout: 20000 })
    await holder.acquire(key)
    const waiter = R.createLock(url(), { wakeOnRelease: true, retries: 3, delay: 200 })
    const channel = `{${key}}:redislock-rs:released`
    const spam = setInterval(() => redis.check.publish(channel, '1'), 20)
    const t0 = Date.now()
    const err = await waiter.acquire(key).catch((e) => e)
    const waited = Date.now() - t0
    clearInterval(spam)
    assert.ok(err instanceof R.LockAcquisitionError)
    assert.ok(waited >= 550, `three full delays despite ~30 announcements: ${waited} ms`)
    assert.ok(waited < 2000, `no more than retries × delay (+ round trips): ${waited} ms`)
    await holder.release()
  })

  test('a redislock 1.3.0 holder never announces: its release still hands over by polling', async () => {
    const client = new IORedis({ port: redis.server.port })
    try {
      const key = fresh('wake-peer')
      const peer = redislock.createLock(client, { timeout: 10000 })
      await peer.acquire(key)
      const waiter = R.createLock(url(), { wakeOnRelease: true, retries: 50, delay: 100 })
      const waiting = waiter.acquire(key)
      await sleep(150)
      await peer.release()
      await waiting
      assert.equal(await redis.check.get(key), waiter._id)
      await waiter.release()
    } finally {
      client.disconnect()
    }
  })
})

describe('fencing tokens', () => {
  test('strictly increasing under contention across 3 processes', async () => {
    const key = fresh('fence')
    const runs = [0, 1, 2].map(() => new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'fencing-worker.js'),
        String(redis.server.port), key, '40'], { stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      child.stdout.on('data', (d) => { out += d })
      child.on('exit', (code) => code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}`)))
    }))
    const results = await Promise.all(runs)
    const all = results.flatMap((r) => r.tokens.map(BigInt))
    assert.equal(all.length, 120)
    assert.equal(new Set(all.map(String)).size, 120, 'every grant its own token')
    for (const r of results) {
      assert.equal(r.stale, 0, 'each grant saw a token above the last one written under the lock')
      const mine = r.tokens.map(BigInt)
      for (let i = 1; i < mine.length; i++) assert.ok(mine[i] > mine[i - 1])
    }
    const sorted = [...all].sort((a, b) => (a < b ? -1 : 1))
    assert.equal(sorted[0], 1n)
    assert.equal(sorted[119], 120n)
    const info = await R.inspect(url(), key)
    assert.equal(info.held, false)
    assert.equal(info.fencingToken, 120n)
  })

  test('the counter lives in the lock key\'s hash slot and survives a restart with AOF on', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-aof-'))
    const srv = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] })
    const c = new IORedis({ port: srv.port, lazyConnect: true, maxRetriesPerRequest: 1 })
    c.on('error', () => {})
    try {
      const key = 'orders:42'
      const lock = R.createLock(srv.url, { fencing: true })
      await lock.acquire(key)
      assert.equal(lock.fencingToken, 1n)
      await lock.release()
      await lock.acquire(key)
      assert.equal(lock.fencingToken, 2n)
      await lock.release()
      await srv.restart()
      await lock.acquire(key)
      assert.equal(lock.fencingToken, 3n, 'the counter outlived the restart')
      await lock.release()
      const keys = (await c.keys('*')).filter((k) => k !== key)
      assert.deepEqual(keys, ['{orders:42}:redislock-rs:fencing'])
      assert.equal(await c.ttl(keys[0]), -1, 'the counter never expires')
    } finally {
      c.disconnect()
      await srv.stop()
      fs.rmSync(dir, { recursive: true, force: true })
    }
    // CLUSTER KEYSLOT needs a cluster-enabled server (no slots needed).
    const cdir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-slot-'))
    const cluster = await startRedis({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', path.join(cdir, 'nodes.conf'), '--dir', cdir] })
    const cc = new IORedis({ port: cluster.port })
    try {
      for (const key of ['orders:42', '{user:7}:profile', 'a{b', 'plain']) {
        const counter = /\{[^}]+\}/.test(key) ? `${key}:redislock-rs:fencing` : `{${key}}:redislock-rs:fencing`
        assert.equal(await cc.cluster('KEYSLOT', counter), await cc.cluster('KEYSLOT', key), key)
      }
      // A key with a '}' but no hash tag (Redis hashes all of it) gets a
      // counter `{tag}<key>:…` whose tag hashes to the key's slot.
      const lock = R.createLock(url(), { fencing: true })
      for (const key of [`${fresh('stray')}}42`, `}${fresh('lead')}`, `{}${fresh('empty')}`, `${fresh('late')}{}b{c}`]) {
        await lock.acquire(key)
        assert.equal(lock.fencingToken, 1n, key)
        await lock.release()
        await lock.acquire(key)
        assert.equal(lock.fencingToken, 2n, key)
        await lock.release()
        const counters = await redis.check.keys(`*${key}:redislock-rs:fencing`)
        assert.equal(counters.length, 1, key)
        assert.match(counters[0], /^\{[0-9A-Za-z]{1,3}\}/)
        assert.equal(counters[0].slice(counters[0].indexOf('}') + 1), `${key}:redislock-rs:fencing`)
        assert.equal(await redis.check.get(counters[0]), '2')
        assert.equal(await cc.cluster('KEYSLOT', counters[0]), await cc.cluster('KEYSLOT', key), key)
        assert.equal((await R.inspect(url(), key)).fencingToken, 2n, key)
      }
    } finally {
      cc.disconnect()
      await cluster.stop()
      fs.rmSync(cdir, { recursive: true, force: true })
    }
  })
})

describe('using, await using, inspect', () => {
  test('using resolves with the routine\'s value and releases; the routine\'s error wins', async () => {
    const key = fresh('using')
    let inside
    const v = await R.using(url(), key, { timeout: 1000 }, async (signal) => {
      inside = { aborted: signal.aborted, held: await redis.check.get(key) }
      return 'value'
    })
    assert.equal(v, 'value')
    assert.equal(inside.aborted, false)
    assert.ok(inside.held)
    assert.equal(await redis.check.exists(key), 0)
    const boom = new Error('boom')
    await assert.rejects(R.using(url(), key, async () => { throw boom }), (err) => err === boom)
    assert.equal(await redis.check.exists(key), 0)
    // The routine deletes the key itself: its error wins, the release error is its cause.
    const own = new Error('own')
    const err = await R.using(url(), key, {}, async () => { await redis.check.del(key); throw own }).catch((e) => e)
    assert.equal(err, own)
    assert.ok(err.cause instanceof R.LockReleaseError)
  })

  test('using rejects with the LockLostError when the lock is lost mid-routine, even if the routine returns', async () => {
    const key = fresh('using-lost')
    const err = await R.using(url(), key, { timeout: 600 }, async (signal) => {
      await redis.check.set(key, 'intruder')
      await new Promise((resolve) => signal.addEventListener('abort', resolve))
      return 'done anyway'
    }).catch((e) => e)
    assert.ok(err instanceof R.LockLostError, String(err))
    assert.equal(err.reason, 'taken')
    assert.equal(await redis.check.get(key), 'intruder')
  })

  test('Symbol.asyncDispose releases a held lock; inspect reports what Redis holds', async () => {
    const key = fresh('dispose')
    const lock = R.createLock(url(), { timeout: 5000 })
    await lock.acquire(key)
    const info = await R.inspect(url(), key)
    assert.equal(info.held, true)
    assert.equal(info.owner, lock._id)
    assert.ok(info.ttlMs > 4000 && info.ttlMs <= 5000)
    assert.equal(info.fencingToken, undefined)
    await lock[Symbol.asyncDispose]()
    assert.equal(lock._locked, false)
    await lock[Symbol.asyncDispose]() // not held: nothing to do
    assert.deepEqual(await R.inspect(url(), key), { held: false, ttlMs: 0 })
    await assert.rejects(R.inspect(url(), ''), TypeError)
  })

  test('remainingMs counts down from the grant, never negative', async () => {
    const key = fresh('remaining')
    const lock = R.createLock(url(), { timeout: 1500 })
    assert.equal(lock.remainingMs(), 0)
    await lock.acquire(key)
    const first = lock.remainingMs()
    assert.ok(first > 500 && first <= 1500, String(first))
    await sleep(1600)
    assert.equal(lock.remainingMs(), 0)
    await lock.release().catch(() => {})
  })
})

describe('processes', () => {
  const run = (body) => {
    const script = `
      const R = require(${JSON.stringify(require.resolve('..'))})
      const url = ${JSON.stringify(url())}
      ;(async () => { ${body} })().catch((e) => { console.error(e); process.exit(1) })
    `
    const t0 = Date.now()
    const res = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20000 })
    return { ...res, ms: Date.now() - t0 }
  }

  test('a process whose only work is an autoExtend lock exits once it is released', () => {
    const res = run(`
      const lock = R.createLock(url, { timeout: 1000, autoExtend: true })
      await lock.acquire('beyond:exit:' + process.pid)
      await new Promise((r) => setTimeout(r, 1500))
      await lock.release()
      console.log('released')
    `)
    assert.equal(res.status, 0, res.stderr)
    assert.equal(res.stdout.trim(), 'released')
    assert.ok(res.ms < 6000, `exited after ${res.ms} ms`)
  })

  test('worker threads each keep their own leases and exit with the process', () => {
    const res = run(`
      const { Worker } = require('worker_threads')
      const code = \`
        const { parentPort, workerData } = require('worker_threads')
        const R = require(workerData.mod)
        ;(async () => {
          const lock = R.createLock(workerData.url, { timeout: 600, autoExtend: true })
          await lock.acquire('beyond:worker:' + workerData.i + ':' + process.pid)
          const until = Date.now() + 1500
          while (Date.now() < until) {}
          const lost = lock.signal.aborted
          await lock.release()
          parentPort.postMessage({ lost })
        })()
      \`
      const mod = ${JSON.stringify(require.resolve('..'))}
      const results = await Promise.all([0, 1, 2].map((i) => new Promise((resolve, reject) => {
        const w = new Worker(code, { eval: true, workerData: { mod, url, i } })
        w.once('message', resolve)
        w.once('error', reject)
      })))
      console.log(JSON.stringify(results))
    `)
    assert.equal(res.status, 0, res.stderr)
    assert.deepEqual(JSON.parse(res.stdout.trim()), [{ lost: false }, { lost: false }, { lost: false }],
      'each worker kept its 600 ms lock through a 1.5 s stall')
    assert.ok(res.ms < 8000, `exited after ${res.ms} ms`)
  })

  test('a process that drops a held autoExtend lock is not kept alive by the keeper', async () => {
    const key = 'beyond:dropped:' + process.pid
    const res = run(`
      const lock = R.createLock(url, { timeout: 1000, autoExtend: true })
      await lock.acquire(${JSON.stringify(key)})
      console.log('held')
    `)
    assert.equal(res.status, 0, res.stderr)
    assert.equal(res.stdout.trim(), 'held')
    assert.ok(res.ms < 6000, `exited after ${res.ms} ms`)
    await sleep(1200)
    assert.equal(await redis.check.exists(key), 0, 'left to expire by its TTL')
  })
})

