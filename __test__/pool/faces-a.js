'use strict'

// An ava test file, as a user's project would have (ava runs each file in
// its own worker thread; a second worker loading the addon once crashed it
// with SIGSEGV): the redislock and Redisson faces lock and release.
// Run by __test__/worker-pool.test.js; the server is REDISLOCK_RS_POOL_URL.
const test = require('ava')
const IORedis = require('ioredis')
const redislock = require('redislock-rs')
const { Redisson } = require('redislock-rs/redisson')

const url = process.env.REDISLOCK_RS_POOL_URL
const client = new IORedis(url)
const key = (name) => `pool:a:${name}:${process.pid}`
test.after.always(() => client.quit())

test('redislock: acquire excludes a second lock, release frees the key', async (t) => {
  const lock = redislock.createLock(client, { timeout: 5000, retries: 0 })
  await lock.acquire(key('lock'))
  await t.throwsAsync(redislock.createLock(client, { retries: 0 }).acquire(key('lock')), { instanceOf: redislock.LockAcquisitionError })
  await lock.release()
  t.is(await client.exists(key('lock')), 0)
})

test('Redisson: lock, isLocked, unlock', async (t) => {
  const redisson = new Redisson({ redis: { client: url } })
  const lock = redisson.getLock(key('rlock'))
  await lock.lock()
  t.true(await lock.isLocked())
  await lock.unlock()
  t.false(await lock.isLocked())
  await redisson.quit()
})
