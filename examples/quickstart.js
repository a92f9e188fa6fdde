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
  console.log('done')
}).catch((err) => {
  console.error(err)
  process.exitCode = 1
})
