'use strict'

/**
 * Redis stopped and restarted between two acquires: the shared connection
 * heals on its own; the user does nothing.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { useRedis } = require('./helpers/redis')
const { createLock, LockAcquisitionError } = require('..')

const redis = useRedis()

test('the first acquire after a restart succeeds', async () => {
  const lock = createLock({ port: redis.server.port })
  await lock.acquire('restart:a')
  await lock.release()

  await redis.server.restart(100)
  const started = Date.now()
  await lock.acquire('restart:b')
  assert.ok(Date.now() - started < 3000)
  assert.equal(lock._locked, true)
  await lock.release()
})

test('while Redis is down acquire fails with LockAcquisitionError; once back it works', async () => {
  const lock = createLock({ port: redis.server.port })
  await redis.server.stop()
  const started = Date.now()
  const err = await lock.acquire('restart:c').catch((e) => e)
  assert.ok(err instanceof LockAcquisitionError, String(err))
  assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`)
  await redis.server.start()
  await lock.acquire('restart:c')
  assert.equal(lock._locked, true)
  await lock.release()
})
