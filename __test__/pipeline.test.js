'use strict'

/**
 * Many operations issued in one JavaScript turn go out as one pipeline on
 * the shared connection. With large keys the socket cannot take the whole
 * write at once, so the engine must wait for writability and finish the
 * write later (a partial write must neither lose nor reorder commands).
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { useRedis } = require('./helpers/redis')
const { createLock } = require('..')

const redis = useRedis()

test('300 acquires with 64 KiB keys in one turn (~20 MB written), then 300 releases', async () => {
  const { server, check } = redis
  const N = 300
  const keys = Array.from({ length: N }, (_, i) => `big:${i}:` + 'k'.repeat(64 * 1024))
  const locks = keys.map(() => createLock({ port: server.port }, { timeout: 30000 }))
  await Promise.all(locks.map((l, i) => l.acquire(keys[i])))
  for (let i = 0; i < N; i += 37) assert.equal(await check.get(keys[i]), locks[i]._id)
  assert.equal(Number(await check.dbsize()), N)
  // A second lock on each key is refused: every SET landed in order.
  const others = keys.map(() => createLock({ port: server.port }))
  const refused = await Promise.all(others.map((l, i) => l.acquire(keys[i]).then(() => false, (e) => e.name === 'LockAcquisitionError')))
  assert.equal(refused.filter(Boolean).length, N)
  await Promise.all(locks.map((l) => l.release()))
  assert.equal(Number(await check.dbsize()), 0)
})
