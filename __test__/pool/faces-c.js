'use strict'

// An ava test file, as a user's project would have (ava runs each file in
// its own worker thread; a second worker loading the addon once crashed it
// with SIGSEGV): the redis-semaphore face's Mutex and Semaphore.
// Run by __test__/worker-pool.test.js; the server is REDISLOCK_RS_POOL_URL.
const test = require('ava')
const IORedis = require('ioredis')
const { Mutex, Semaphore } = require('redislock-rs/semaphore')

const client = new IORedis(process.env.REDISLOCK_RS_POOL_URL)
const key = (name) => `pool:c:${name}:${process.pid}`
test.after.always(() => client.quit())
const once = { acquireAttemptsLimit: 1 } // one attempt: a "no" at once

test('Mutex: acquire excludes a second one, release frees the key', async (t) => {
  const mutex = new Mutex(client, key('m'))
  await mutex.acquire()
  t.false(await new Mutex(client, key('m'), once).tryAcquire())
  await mutex.release()
  t.is(await client.exists(`mutex:${key('m')}`), 0)
})

test('Semaphore: two holders of two permits, a third is refused', async (t) => {
  const [a, b, c] = [0, 1, 2].map(() => new Semaphore(client, key('s'), 2, once))
  await a.acquire()
  await b.acquire()
  t.false(await c.tryAcquire())
  await a.release()
  await b.release()
  t.is(await client.zcard(`semaphore:${key('s')}`), 0)
})
