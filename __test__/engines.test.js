'use strict'

/**
 * Engine selection: the JS-thread engine is the default on Node and runs
 * with no thread of ours; REDISLOCK_RS_ENGINE=tokio selects the tokio
 * engine, which runs on its own thread; anything else is refused. (The
 * whole suite runs once per engine: scripts/test-engines.js.)
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('child_process')
const path = require('path')
const { useRedis } = require('./helpers/redis')
const { defaultEngine } = require('../lib/native/bridge')

const redis = useRedis()

function probe (engine) {
  const env = { ...process.env }
  if (engine === undefined) delete env.REDISLOCK_RS_ENGINE
  else env.REDISLOCK_RS_ENGINE = engine
  return spawnSync(process.execPath, [path.join(__dirname, 'fixtures', 'engine-probe.js'), String(redis.server.port)],
    { env, encoding: 'utf8', timeout: 15000 })
}

test('this run uses the engine REDISLOCK_RS_ENGINE names (default: js)', () => {
  assert.equal(defaultEngine(), process.env.REDISLOCK_RS_ENGINE || 'js')
})

test('the JS-thread engine is the default and holds a lock with no thread of ours', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  for (const engine of [undefined, 'js']) {
    const res = probe(engine)
    assert.equal(res.status, 0, res.stderr)
    assert.deepEqual(JSON.parse(res.stdout), { engine: 'js', whileHeld: [], after: [] })
  }
})

test('REDISLOCK_RS_ENGINE=tokio runs operations on the tokio thread', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  const res = probe('tokio')
  assert.equal(res.status, 0, res.stderr)
  const out = JSON.parse(res.stdout)
  assert.equal(out.engine, 'tokio')
  assert.deepEqual(out.whileHeld, ['redislock-rs'])
})

test('an unknown REDISLOCK_RS_ENGINE is refused with a clear error', () => {
  const res = probe('fast')
  assert.notEqual(res.status, 0)
  assert.match(res.stderr, /REDISLOCK_RS_ENGINE must be one of js, tokio; got "fast"/)
})

test('a second module instance in the same environment settles its own operations and the first one\'s', () => {
  const res = spawnSync(process.execPath, [path.join(__dirname, 'fixtures', 'reload-probe.js'), String(redis.server.port)],
    { encoding: 'utf8', timeout: 15000 })
  assert.equal(res.status, 0, res.stderr)
  assert.deepEqual(JSON.parse(res.stdout), { distinct: true, a: true, b: true, released: true })
})

test('operations started in one tick keep their own numbers (one buffer carries every call\'s)', async () => {
  // lib/native/wire.js fills one Float64Array for every native call; each
  // entry must copy it before it returns. Locks of every face with their
  // own TTLs, started together, must each get theirs.
  const IORedis = require('ioredis')
  const { Mutex, Semaphore } = require('../semaphore')
  const Redlock = require('../redlock')
  const { createLock } = require('..')
  const client = new IORedis({ port: redis.server.port, host: '127.0.0.1' })
  const tag = `nums:${process.pid}`
  try {
    const ttls = [3000, 7000, 11000, 15000, 19000, 23000]
    const mutexes = ttls.slice(0, 2).map((t, i) => new Mutex(client, `${tag}:m${i}`, { lockTimeout: t, refreshInterval: 0 }))
    const sems = ttls.slice(2, 4).map((t, i) => new Semaphore(client, `${tag}:s${i}`, 3, { lockTimeout: t, refreshInterval: 0 }))
    const redlock = new Redlock([client], { retryCount: 0 })
    const plain = createLock(redis.server.url, { timeout: ttls[5], retries: 0 })
    const held = await Promise.all([
      ...mutexes.map((m) => m.acquire()),
      ...sems.map((s) => s.acquire()),
      redlock.lock(`${tag}:r`, ttls[4]),
      plain.acquire(`${tag}:p`)
    ])
    const keys = [`mutex:${tag}:m0`, `mutex:${tag}:m1`, `semaphore:${tag}:s0`, `semaphore:${tag}:s1`, `${tag}:r`, `${tag}:p`]
    const pttls = await Promise.all(keys.map((k) => client.pttl(k)))
    pttls.forEach((ms, i) => {
      assert.ok(ms > ttls[i] - 2000 && ms <= ttls[i], `${keys[i]}: PTTL ${ms}, expected about ${ttls[i]}`)
    })
    await Promise.all([...mutexes, ...sems].map((l) => l.release()))
    await held[4].unlock()
    await plain.release()
  } finally {
    client.disconnect()
  }
})
