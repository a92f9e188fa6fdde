'use strict'

/**
 * The lease keeper's JavaScript side (lib/common/keeper.js): a loss the keeper
 * reports between the native grant and `watch()` — while the JavaScript
 * thread is blocked, so the acquire's completion waits — still reaches the
 * lock's signal. The invariant checked: a kept lock is either still renewed
 * (its key ours) or its signal is aborted; never silently given up.
 *
 * On the tokio engine the grant (and the keeper's start) happen on the I/O
 * thread while JavaScript is blocked, so the keeper reports the stall before
 * JavaScript sees the grant. On the JS-thread engine the operation and the
 * keeper's start run on the blocked thread: a request on a connection still
 * opening is written once the loop turns again (the lock is then renewed);
 * a lone caller's request on an open connection is written at once
 * (src/node/engine/jsloop/batch.rs `lone`), so its grant lands during the
 * block and its 300 ms lease is over before the keeper can renew it (told,
 * `expired`). The invariant holds either way.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const R = require('..')
const { useRedis } = require('./helpers/redis')
const { sleep, block } = require('./helpers/wait')

const redis = useRedis()
let seq = 0
const fresh = (what) => `keeper:${what}:${process.pid}:${seq++}`
const stalled = () => R.createLock(redis.server.url, { timeout: 300, autoExtend: { maxEventLoopLagMs: 200 } })

/** Renewed and ours, or lost and told: never gone with a quiet signal. */
async function assertRenewedOrTold (lock, key) {
  await sleep(1000) // past the 300 ms lease: only renewals keep it
  const owner = await redis.check.get(key)
  if (owner === lock._id) {
    assert.equal(lock.signal.aborted, false, 'renewed, so not lost')
    const pttl = await redis.check.pttl(key)
    assert.ok(pttl > 0 && pttl <= 300, `renewed to the lease: ${pttl}`)
    await lock.release()
    return 'renewed'
  }
  assert.equal(owner, null, 'nobody else took it')
  assert.equal(lock.signal.aborted, true, 'no longer renewed, so its signal says so')
  assert.equal(lock.signal.reason.name, 'LockLostError')
  assert.ok(reasons.includes(lock.signal.reason.reason), `lost for ${lock.signal.reason.reason}`)
  assert.equal(lock.signal.reason.key, key)
  return 'told'
}

const tokio = process.env.REDISLOCK_RS_ENGINE === 'tokio'
const expected = tokio ? 'told' : undefined
// Why a told lock was lost: the stall the keeper saw, or (JS-thread engine)
// a lease that ended before the keeper saw the grant.
const reasons = tokio ? ['event-loop-stalled'] : ['event-loop-stalled', 'expired']

test('a loss before watch() with no other kept lock (the priming poll) reaches the signal', async () => {
  const lock = stalled()
  const key = fresh('priming')
  const acquiring = lock.acquire(key)
  block(1500) // the grant lands, then the keeper finds the loop stalled
  await acquiring
  const outcome = await assertRenewedOrTold(lock, key)
  if (expected) assert.equal(outcome, expected)
})

test('a loss before watch() collected by the running poll reaches the signal', async () => {
  // Another kept lock keeps the poll interval running; its own lag bound
  // (the default, 30 s) is not reached.
  const other = R.createLock(redis.server.url, { timeout: 1000, autoExtend: true })
  const otherKey = fresh('other')
  await other.acquire(otherKey)
  const lock = stalled()
  const key = fresh('polled')
  const acquiring = await new Promise((resolve) => setImmediate(() => {
    const p = lock.acquire(key)
    // Blocked in the check phase: the next turn runs the overdue poll
    // (timers) before the acquire's completion (I/O).
    block(1500)
    resolve({ p })
  }))
  await acquiring.p
  const outcome = await assertRenewedOrTold(lock, key)
  if (expected) assert.equal(outcome, expected)
  assert.equal(other.signal.aborted, false)
  assert.equal(await redis.check.get(otherKey), other._id)
  await other.release()
})
