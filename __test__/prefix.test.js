'use strict'

/**
 * Key prefixes: node_redis v3 `prefix` and ioredis `keyPrefix` clients put
 * the prefix in front of every key they send, so redislock with such a client
 * locks `prefix + key`. redislock-rs must lock the same key, so that a fleet
 * half on redislock@1.3.0 and half on redislock-rs excludes itself during a
 * rolling migration: here one process of each, in both orders, on the same
 * key, with identically configured clients.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const IORedis = require('ioredis')
const redis3 = require('redis3')
const { useRedis } = require('./helpers/redis')
const { createLock } = require('..')

const redis = useRedis()

/** A lock-holder child; `next()` resolves to its next JSON line. */
function holder (impl, kind, key, prefix) {
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'lock-holder.js'),
    impl, kind, String(redis.server.port), key, prefix], { stdio: ['pipe', 'pipe', 'pipe'] })
  const lines = []
  const waiting = []
  let buf = ''
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  child.stdout.on('data', (d) => {
    buf += d
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = JSON.parse(buf.slice(0, i))
      buf = buf.slice(i + 1)
      if (waiting.length) waiting.shift().resolve(line)
      else lines.push(line)
    }
  })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  exited.then((code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`${impl} holder exited ${code}: ${stderr}`))
  })
  return {
    next: () => lines.length ? Promise.resolve(lines.shift()) : new Promise((resolve, reject) => waiting.push({ resolve, reject })),
    release: () => child.stdin.write('release\n'),
    async end () {
      child.stdin.end()
      const code = await exited
      assert.equal(code, 0, stderr)
    }
  }
}

for (const kind of ['redis3', 'ioredis']) {
  for (const [first, second] of [['redislock', 'rs'], ['rs', 'redislock']]) {
    test(`${kind} prefixed clients: ${first} holds, ${second} is refused, then takes it after the release`, async () => {
      const key = `fleet:${kind}:${first}`
      const prefix = `app-${kind}:`
      const a = holder(first, kind, key, prefix)
      try {
        const held = await a.next()
        assert.equal(held.acquired, true, JSON.stringify(held))
        assert.equal(held.key, key, 'the lock reports the key as given')
        // The lock is on the prefixed key only, carrying the holder's token.
        assert.deepEqual(await redis.check.keys(`*${key}`), [prefix + key])
        assert.equal(await redis.check.get(prefix + key), held.id)

        // b tries only after a holds: exclusion, with redislock's message.
        const b = holder(second, kind, key, prefix)
        const refused = await b.next()
        assert.deepEqual(refused, { acquired: false, name: 'LockAcquisitionError', message: `Could not acquire lock on "${key}"` })
        await b.end()

        a.release()
        assert.deepEqual(await a.next(), { released: true })
        assert.equal(await redis.check.exists(prefix + key), 0)

        const c = holder(second, kind, key, prefix)
        const taken = await c.next()
        assert.equal(taken.acquired, true, JSON.stringify(taken))
        assert.equal(await redis.check.get(prefix + key), taken.id)
        c.release()
        assert.deepEqual(await c.next(), { released: true })
        await c.end()
      } finally {
        await a.end()
      }
    })
  }
}

test('extend and release reach the prefixed key; errors name the key as given', async () => {
  const client = redis3.createClient({ port: redis.server.port, prefix: 'svc:' })
  try {
    const lock = createLock(client, { timeout: 5000 })
    await lock.acquire('p1')
    assert.equal(lock._key, 'p1')
    assert.equal(await redis.check.get('svc:p1'), lock._id)
    assert.equal(await redis.check.exists('p1'), 0)
    await lock.extend(60000)
    const ttl = await redis.check.pttl('svc:p1')
    assert.ok(ttl > 50000, `ttl ${ttl}`)
    const other = createLock(client)
    const err = await other.acquire('p1').catch((e) => e)
    assert.equal(err.message, 'Could not acquire lock on "p1"')
    // An unprefixed lock on the same server does not see the prefixed one.
    const plain = createLock({ port: redis.server.port })
    await plain.acquire('p1')
    assert.equal(await redis.check.get('p1'), plain._id)
    await plain.release()
    await lock.release()
    assert.equal(await redis.check.exists('svc:p1'), 0)
  } finally {
    await new Promise((resolve) => client.quit(() => resolve()))
  }
})

test('ioredis Buffer keyPrefix, and keyPrefix/prefix in an options object', async () => {
  const io = new IORedis({ port: redis.server.port, keyPrefix: Buffer.from('buf:') })
  try {
    const a = createLock(io)
    await a.acquire('k')
    assert.equal(await redis.check.get('buf:k'), a._id)
    await a.release()
  } finally {
    await io.quit()
  }
  for (const opts of [{ keyPrefix: 'opt:' }, { prefix: 'opt:' }]) {
    const lock = createLock({ port: redis.server.port, ...opts })
    await lock.acquire('k')
    assert.equal(await redis.check.get('opt:k'), lock._id)
    await lock.release()
  }
  assert.throws(() => createLock({ port: redis.server.port, keyPrefix: 'a:', prefix: 'b:' }), TypeError)
  const bad = new IORedis({ port: redis.server.port, keyPrefix: Buffer.from([0xff, 0xfe]), lazyConnect: true })
  assert.throws(() => createLock(bad), /not valid UTF-8/)
  bad.disconnect()
})
