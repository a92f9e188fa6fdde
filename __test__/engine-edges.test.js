'use strict'

/**
 * Corners of the engines' bridge where a promise could be left pending or
 * the process crashed (issue 18): a long chain of operations finishing
 * inside one engine turn, two copies of the package over one loaded addon,
 * an outcome JavaScript cannot apply, and abandoned retry pauses.
 */

const { test } = require('node:test')
const assert = require('node:assert')
const path = require('path')
const { useRedis } = require('./helpers/redis')
const { sleep, settle } = require('./helpers/wait')

const redis = useRedis()

test('a chain of operations that each finish inside the turn that started them all settle', async () => {
  // An operation on an endpoint id that names no endpoint fails inside its
  // first poll; with native promises the next one starts in the same
  // engine turn, from the previous one's continuation.
  const operations = require('../lib/native/bridge')
  const engine = operations.engineFor()
  const settleOutcome = (lock, key, outcome, err, resolve, reject) => (err ? reject(err) : resolve(outcome))
  for (let i = 0; i < 40; i++) {
    const call = operations.start(settleOutcome, null, 'chain', (id) => engine.acquire(0x7ffffff0, id, 'chain', 'token', 1000, 0, 0), Promise)
    const res = await settle(call, 2000, `call ${i + 1} of the chain`)
    assert.ok(res.err, `call ${i + 1} resolved on an endpoint that does not exist`)
  }
})

test('an outcome that cannot be applied rejects its own call and leaves the others alone', async () => {
  const redislock = require('..')
  const frozen = redislock.createLock(redis.server.url)
  const other = redislock.createLock(redis.server.url)
  const a = frozen.acquire('edges:frozen')
  const b = other.acquire('edges:other')
  Object.freeze(frozen) // the lock object cannot record its outcome
  const [ra, rb] = await Promise.all([settle(a, 3000, 'acquire of the frozen lock'), settle(b, 3000, 'the other acquire')])
  assert.ok(ra.err instanceof TypeError, `expected a TypeError, got ${ra.err}`)
  assert.ok(!rb.err, `the other acquire failed: ${rb.err && rb.err.message}`)
  assert.strictEqual(await redis.check.get('edges:other'), other._id)
  await other.release()
})

test('abandoned retry pauses leave nothing behind on the engine', async () => {
  const redislock = require('..')
  const { engineStats } = require('../lib/native/loader')
  const holder = redislock.createLock(redis.server.url, { timeout: 20000 })
  await holder.acquire('edges:held')
  const controllers = Array.from({ length: 100 }, () => new AbortController())
  const waits = controllers.map((c) =>
    redislock.createLock(redis.server.url, { retries: -1, delay: 60000 }).acquire('edges:held', { signal: c.signal }))
  await sleep(200)
  const during = engineStats()
  const outcomes = waits.map((w) => settle(w, 2000, 'aborted wait'))
  for (const c of controllers) c.abort()
  for (const o of await Promise.all(outcomes)) assert.ok(o.err instanceof redislock.LockAcquisitionError, `${o.err}`)
  await sleep(50)
  const after = engineStats()
  await holder.release()
  if (during === null) return assert.strictEqual(process.env.REDISLOCK_RS_ENGINE, 'tokio')
  assert.ok(during.timers >= 100, `the waits were pausing on the engine's timers (${during.timers})`)
  assert.ok(after.timers < 5, `${after.timers} timers left after the waits were abandoned`)
})

test('two copies of the package over one loaded addon keep their operations apart', async () => {
  const first = require('..')
  // What a second install of the JS package resolving the same platform
  // package does, and what Jest's resetModules does: every module is
  // loaded again but the .node file, which Node loads once.
  for (const id of Object.keys(require.cache)) if (!id.endsWith('.node')) delete require.cache[id]
  const second = require('..')
  assert.notStrictEqual(first, second)
  const a = first.createLock(redis.server.url)
  const b = second.createLock(redis.server.url)
  const [ra, rb] = await Promise.all([settle(a.acquire('edges:copy:a'), 3000, 'first copy'), settle(b.acquire('edges:copy:b'), 3000, 'second copy')])
  assert.ok(!ra.err && !rb.err, `${ra.err || rb.err}`)
  assert.strictEqual(await redis.check.get('edges:copy:a'), a._id)
  assert.strictEqual(await redis.check.get('edges:copy:b'), b._id)
  // Many at once, interleaved: each promise gets its own operation's outcome.
  const locks = Array.from({ length: 50 }, (_, i) => (i % 2 ? first : second).createLock(redis.server.url))
  await Promise.all(locks.map((l, i) => l.acquire(`edges:copy:${i}`)))
  for (const [i, l] of locks.entries()) assert.strictEqual(await redis.check.get(`edges:copy:${i}`), l._id)
  await Promise.all([a.release(), b.release(), ...locks.map((l) => l.release())])
})

test('buffers a burst of large commands grew are given back once the burst is over', async () => {
  const redislock = require('..')
  const { engineStats } = require('../lib/native/loader')
  const big = 'k'.repeat(1 << 20) // 1 MiB keys: every command is large
  const locks = Array.from({ length: 40 }, () => redislock.createLock(redis.server.url, { timeout: 20000 }))
  await Promise.all(locks.map((l, i) => l.acquire(`${big}:${i}`)))
  await Promise.all(locks.map((l) => l.release()))
  const stats = engineStats()
  if (stats === null) return assert.strictEqual(process.env.REDISLOCK_RS_ENGINE, 'tokio')
  assert.ok(stats.bufferedBytes < 4 << 20, `${(stats.bufferedBytes / 1048576).toFixed(1)} MiB still held by the connections' buffers`)
})

test('a Unix socket whose accept backlog is full fails the connect at once, saying so', async () => {
  const fs = require('fs')
  const os = require('os')
  const net = require('net')
  const { spawn } = require('child_process')
  const redislock = require('..')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-backlog-'))
  const sock = path.join(dir, 'full.sock')
  // A server that listens with a backlog of 1 and never accepts: its event loop is busy.
  const child = spawn(process.execPath, ['-e',
    `require('net').createServer().listen({ path: ${JSON.stringify(sock)}, backlog: 1 }, () => { console.log('up'); for (;;); })`],
  { stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    await new Promise((resolve) => child.stdout.once('data', resolve))
    const fillers = []
    for (let i = 0; i < 8; i++) {
      const c = net.connect(sock)
      c.on('error', () => {})
      fillers.push(c)
    }
    await sleep(200)
    const lock = redislock.createLock({ path: sock, connectTimeout: 2000 }, { retries: 0 })
    const r = await settle(lock.acquire('backlog:k'), 4000, 'acquire on a full backlog')
    assert.ok(r.err instanceof redislock.LockAcquisitionError, `expected LockAcquisitionError, got ${r.err}`)
    assert.strictEqual(r.err.cause.code, 'ERR_REDIS_CONNECTION')
    if (process.env.REDISLOCK_RS_ENGINE !== 'tokio') {
      assert.match(r.err.message, /backlog is full|unavailable/i)
    }
    for (const c of fillers) c.destroy()
  } finally {
    child.kill('SIGKILL')
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
