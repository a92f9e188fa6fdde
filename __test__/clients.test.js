'use strict'

/**
 * Every client form createLock accepts, against a password-protected Redis
 * on a non-default port, locking in database 3: the lock must land in
 * database 3 with the lock's token, and all forms naming the same server,
 * database and credentials must share one native connection.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const redis3 = require('redis3')
const redis4 = require('redis4')
const redisLatest = require('redis')
const IORedis = require('ioredis')
const { startRedis } = require('./helpers/redis')
const { createLock } = require('..')

const PASSWORD = 's3cret-pw'
let server
let check
const toClose = []

before(async () => {
  server = await startRedis({ args: ['--requirepass', PASSWORD] })
  check = new IORedis({ port: server.port, password: PASSWORD, db: 3, lazyConnect: true })
  await check.connect()
})

after(async () => {
  for (const close of toClose) await close()
  await check.quit()
  await server.stop()
})

const forms = {
  'node_redis v3 client (options)': async () => {
    const c = redis3.createClient({ port: server.port, password: PASSWORD, db: 3 })
    await new Promise((resolve, reject) => { c.once('ready', resolve); c.once('error', reject) })
    toClose.push(() => new Promise((resolve) => c.quit(() => resolve())))
    return c
  },
  'node_redis v3 client (URL)': async () => {
    const c = redis3.createClient(`redis://:${PASSWORD}@127.0.0.1:${server.port}/3`)
    await new Promise((resolve, reject) => { c.once('ready', resolve); c.once('error', reject) })
    toClose.push(() => new Promise((resolve) => c.quit(() => resolve())))
    return c
  },
  'node_redis v4 client (URL)': async () => {
    const c = redis4.createClient({ url: `redis://:${PASSWORD}@127.0.0.1:${server.port}/3` })
    await c.connect()
    toClose.push(() => c.quit())
    return c
  },
  'node_redis latest client (socket options)': async () => {
    const c = redisLatest.createClient({ socket: { host: '127.0.0.1', port: server.port }, password: PASSWORD, database: 3 })
    await c.connect()
    toClose.push(() => c.quit())
    return c
  },
  'ioredis client (options)': async () => {
    const c = new IORedis({ port: server.port, password: PASSWORD, db: 3, lazyConnect: true })
    await c.connect()
    toClose.push(() => c.quit())
    return c
  },
  'ioredis client (URL, then SELECT 3)': async () => {
    const c = new IORedis(`redis://:${PASSWORD}@127.0.0.1:${server.port}/0`, { lazyConnect: true })
    await c.connect()
    await c.select(3)
    toClose.push(() => c.quit())
    return c
  },
  'redis:// URL string': async () => `redis://:${PASSWORD}@127.0.0.1:${server.port}/3`,
  'options object': async () => ({ host: '127.0.0.1', port: server.port, db: 3, password: PASSWORD })
}

for (const [name, make] of Object.entries(forms)) {
  test(`locks in database 3 through a ${name}`, async () => {
    const lock = createLock(await make())
    const key = 'clients:' + name
    await lock.acquire(key)
    try {
      assert.equal(await check.get(key), lock._id)
      const ttl = await check.pttl(key)
      assert.ok(ttl > 9000 && ttl <= 10000, `ttl ${ttl}`)
    } finally {
      await lock.release()
    }
    assert.equal(await check.exists(key), 0)
  })
}

test('all forms naming the same server, db and credentials share one connection', async () => {
  const admin = new IORedis({ port: server.port, password: PASSWORD, lazyConnect: true })
  await admin.connect()
  try {
    // Warm the shared connection, then count clients.
    const warm = createLock(`redis://:${PASSWORD}@127.0.0.1:${server.port}/3`)
    await warm.acquire('clients:warm')
    await warm.release()
    const count = async () => Number(/connected_clients:(\d+)/.exec(await admin.info('clients'))[1])
    const before = await count()
    const locks = []
    for (let i = 0; i < 20; i++) {
      locks.push(createLock({ host: '127.0.0.1', port: server.port, db: 3, password: PASSWORD }))
      locks.push(createLock(`redis://:${PASSWORD}@127.0.0.1:${server.port}/3`))
    }
    await Promise.all(locks.map((l, i) => l.acquire('clients:share:' + i)))
    await Promise.all(locks.map((l) => l.release()))
    assert.equal(await count(), before)
  } finally {
    await admin.quit()
  }
})

test('a wrong password is a LockAcquisitionError, without the password in it', async () => {
  const lock = createLock({ port: server.port, password: 'wrong-password-123' })
  const err = await lock.acquire('clients:nope').catch((e) => e)
  assert.equal(err.name, 'LockAcquisitionError')
  assert.doesNotMatch(`${err.message} ${err.cause && err.cause.message}`, /wrong-password-123/)
})
