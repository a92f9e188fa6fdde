'use strict'

// An ava test file, as a user's project would have (ava runs each file in
// its own worker thread; a second worker loading the addon once crashed it
// with SIGSEGV): the redlock 4 and node-redlock 5 faces lock and release.
// Run by __test__/worker-pool.test.js; the server is REDISLOCK_RS_POOL_URL.
const test = require('ava')
const IORedis = require('ioredis')
const Redlock = require('redislock-rs/redlock')
const { default: Redlock5, ExecutionError } = require('redislock-rs/redlock/v5')

const client = new IORedis(process.env.REDISLOCK_RS_POOL_URL)
const key = (name) => `pool:b:${name}:${process.pid}`
test.after.always(() => client.quit())

test('redlock 4: lock excludes a second lock, unlock frees the key', async (t) => {
  const redlock = new Redlock([client], { retryCount: 0 })
  const lock = await redlock.lock(key('r4'), 5000)
  await t.throwsAsync(redlock.lock(key('r4'), 5000), { any: true, instanceOf: Redlock.LockError }) // redlock 4's LockError is not a native Error
  await lock.unlock()
  t.is(await client.exists(key('r4')), 0)
})

test('node-redlock 5: acquire excludes a second acquire, release frees the key', async (t) => {
  const redlock = new Redlock5([client], { retryCount: 0 })
  const lock = await redlock.acquire([key('r5')], 5000)
  await t.throwsAsync(redlock.acquire([key('r5')], 5000), { instanceOf: ExecutionError })
  await lock.release()
  t.is(await client.exists(key('r5')), 0)
})
