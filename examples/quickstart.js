'use strict'

/**
 * Quick start: two workers take turns on one lock.
 *
 *   npm run demo                       # starts a throwaway redis-server
 *   REDIS_URL=redis://host:6379 npm run demo
 */

const redislock = require('..')
const { LockAcquisitionError } = redislock

async function withRedis (fn) {
  if (process.env.REDIS_URL) return fn(process.env.REDIS_URL)
  const { startRedis } = require('../__test__/helpers/redis')
  const server = await startRedis()
  console.log(`(started a throwaway redis-server on port ${server.port}; set REDIS_URL to use your own)`)
  try {
    return await fn(server.url)
  } finally {
    await server.stop()
  }
}

withRedis(async (url) => {
  // With node_redis or ioredis you would pass your client instead of `url`.
  const first = redislock.createLock(url, { timeout: 20000 })
  const second = redislock.createLock(url, { timeout: 20000, retries: 3, delay: 100 })

  await first.acquire('app:invoice:42')
  console.log('first  acquired app:invoice:42 as', first._id)

  await second.acquire('app:invoice:42').catch(LockAcquisitionError, (err) => {
    console.log('second gave up after 4 attempts:', err.message)
  })

  await first.extend(30000)
  console.log('first  extended its lock to 30 s')
  await first.release()
  console.log('first  released')

  await second.acquire('app:invoice:42')
  console.log('second acquired it; locks held here:', redislock.getAcquiredLocks().length)
  await second.release()

  // The Redisson face: node-redisson's API, reentrant locks, a watchdog.
  const { Redisson } = require('../redisson')
  const redisson = new Redisson({ redis: { client: url } })
  const job = redisson.getLock('app:job:7', 'worker-1')
  await job.lock() // no lease: the watchdog renews it until unlock
  await job.lock() // the same clientId re-enters
  const other = redisson.getLock('app:job:7', 'worker-2')
  console.log('worker-2 tryLock(0):', await other.tryLock(0, 5000))
  const waiting = other.tryLock(5000, 5000) // woken by the release, not by polling
  await job.unlock()
  await job.unlock()
  console.log('worker-2 got it after the release:', await waiting)
  await other.unlock()
  await redisson.quit()
  console.log('done')
}).catch((err) => {
  console.error(err)
  process.exitCode = 1
})
