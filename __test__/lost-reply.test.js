'use strict'

/**
 * A command that ran but whose reply was lost: the connection breaks after
 * Redis acted and before its answer came back. The core sends such a
 * command again over a fresh connection; a release resent after its first
 * try deleted the key finds nothing, and must not then tell the user the
 * lock "had expired" (it had seconds left): it reports the connection
 * failure. A command that never reached Redis is still resent and
 * succeeds, and an extend's resend (its first try leaves the key ours)
 * still succeeds. Every call is bounded by a watchdog.
 *
 * Through a TCP proxy from helpers/proxy.js: `delayReplies` lets the
 * commands through and holds the replies, `holdBack` holds the commands
 * themselves, `drop` breaks every connection.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const IORedis = require('ioredis')
const R = require('..')
const RS = require('../redisson')
const { startRedis } = require('./helpers/redis')
const { startProxy } = require('./helpers/proxy')
const { sleep, settleAll } = require('./helpers/wait')

const N = 200
const TTL = 30000
let srv, proxy, check

before(async () => {
  srv = await startRedis()
  proxy = await startProxy(srv.port)
  check = new IORedis({ port: srv.port })
})
after(async () => {
  if (check) check.disconnect()
  if (proxy) await proxy.close()
  if (srv) await srv.stop()
})

/** Polls until `done()` holds, or fails after `ms`. */
async function until (done, ms, what) {
  const deadline = Date.now() + ms
  while (!(await done())) {
    assert.ok(Date.now() < deadline, `${what} within ${ms} ms`)
    await sleep(5)
  }
}

/** `N` locks with a long TTL, acquired through the proxy (scripts loaded). */
async function heldLocks (prefix) {
  const opts = { port: proxy.port, db: 0 }
  const warm = R.createLock(opts, { timeout: TTL })
  await warm.acquire(`${prefix}:warm`)
  await warm.extend(TTL)
  await warm.release()
  const locks = Array.from({ length: N }, () => R.createLock(opts, { timeout: TTL }))
  await Promise.all(locks.map((l, i) => l.acquire(`${prefix}:${i}`)))
  return locks
}

const keysLeft = (prefix) => check.keys(`${prefix}:*`).then((k) => k.length)

test('a release whose reply was lost never says "had expired" of a lock with time left', async () => {
  const locks = await heldLocks('lost-release')
  assert.equal(await keysLeft('lost-release'), N)
  proxy.delayReplies(60000) // the releases reach Redis and run; their replies are held
  const releases = locks.map((l) => l.release())
  await until(async () => (await keysLeft('lost-release')) === 0, 5000, 'every release ran')
  proxy.drop() // ...and the replies are lost with the connection
  proxy.forward()
  const results = await settleAll(releases, 10000, 'releases')
  const lies = results.filter((r) => r.err && /had expired/.test(r.err.message))
  const failed = results.filter((r) => r.err)
  console.log(`# lost release replies: ${N} releases, ${N - failed.length} resolved, ${failed.length} rejected, ${lies.length} said "had expired"${failed.length ? `; e.g. ${failed[0].err.message}` : ''}`)
  assert.equal(lies.length, 0, `${lies.length} of ${N} releases said "had expired" of a lock with ${TTL / 1000} s left: ${lies[0] && lies[0].err.message}`)
  for (const { err } of failed) {
    assert.ok(err instanceof R.LockReleaseError, String(err))
    assert.ok(err.cause, `a connection failure keeps its cause: ${err.message}`)
    assert.match(err.cause.code, /^ERR_REDIS_(CONNECTION|TIMEOUT)$/, err.message)
  }
})

test('a release that never reached Redis is sent again and succeeds', async () => {
  const locks = await heldLocks('unsent-release')
  proxy.holdBack(/EVAL|DELIFEQ/, 60000) // the releases (a script, or DELIFEQ on Valkey 9) wait in the proxy, never reaching Redis
  const releases = locks.map((l) => l.release())
  await sleep(200)
  assert.equal(await keysLeft('unsent-release'), N, 'no release reached Redis')
  proxy.drop()
  proxy.forward()
  const results = await settleAll(releases, 10000, 'releases')
  const failed = results.filter((r) => r.err)
  console.log(`# unsent releases: ${N - failed.length} of ${N} resolved after the resend`)
  assert.equal(failed.length, 0, `${failed.length} releases failed: ${failed[0] && failed[0].err.message}`)
  assert.equal(await keysLeft('unsent-release'), 0, 'every lock was released')
})

test('an extend whose reply was lost: the resend finds the lock still ours', async () => {
  const locks = await heldLocks('lost-extend')
  proxy.delayReplies(60000)
  const before = await check.pttl('lost-extend:0')
  const extends_ = locks.map((l) => l.extend(2 * TTL))
  await until(async () => (await check.pttl(`lost-extend:${N - 1}`)) > TTL, 5000, 'every extend ran')
  proxy.drop()
  proxy.forward()
  const results = await settleAll(extends_, 10000, 'extends')
  const lies = results.filter((r) => r.err && /had expired/.test(r.err.message))
  const failed = results.filter((r) => r.err)
  console.log(`# lost extend replies: ${N - failed.length} of ${N} resolved, ${lies.length} said "had expired"`)
  assert.ok(before <= TTL)
  assert.equal(lies.length, 0, `${lies.length} extends said "had expired": ${lies[0] && lies[0].err.message}`)
  for (const { err } of failed) {
    assert.ok(err instanceof R.LockExtendError && err.cause, String(err))
  }
  await Promise.all(locks.map((l) => l.release()))
  assert.equal(await keysLeft('lost-extend'), 0)
})

/** `N` Redisson locks held through the proxy (scripts loaded), and their instance. */
async function heldRedissonLocks (prefix) {
  const rs = new RS.Redisson({ redis: { options: { host: '127.0.0.1', port: proxy.port } } })
  const warm = rs.getLock(`${prefix}:warm`)
  assert.equal(await warm.tryLock(0, TTL), true)
  await warm.unlock()
  assert.equal(await warm.tryLock(0, TTL), true)
  assert.equal(await warm.forceUnlock(), true)
  const locks = Array.from({ length: N }, (_, i) => rs.getLock(`${prefix}:${i}`))
  for (const l of locks) assert.equal(await l.tryLock(0, TTL), true)
  return { rs, locks }
}

test('Redisson face: an unlock whose reply was lost resolves (its latch tells the resend), a forceUnlock never says there was no lock', async () => {
  for (const op of ['unlock', 'forceUnlock']) {
    const prefix = `lost-rs-${op}`
    const { rs, locks } = await heldRedissonLocks(prefix)
    try {
      proxy.delayReplies(60000)
      const calls = locks.map((l) => l[op]())
      await until(async () => (await keysLeft(prefix)) === 0, 5000, `every ${op} ran`)
      proxy.drop()
      proxy.forward()
      const results = await settleAll(calls.map((p) => p.then((v) => {
        // forceUnlock's false means "there was no lock": a lie here.
        if (v === false) throw new Error(`${op} said there was no lock`)
      })), 10000, op)
      const failed = results.filter((r) => r.err)
      const lies = failed.filter((r) => /there was no lock/.test(r.err.message))
      console.log(`# lost ${op} replies: ${N - failed.length} of ${N} resolved, ${lies.length} said there was no lock`)
      assert.equal(lies.length, 0, `${lies.length} of ${N} ${op} calls said there was no lock`)
      if (op === 'unlock') {
        assert.equal(failed.length, 0, `an unlock failed: ${failed[0] && failed[0].err.message}`)
      }
      for (const { err } of failed) {
        assert.ok(err instanceof RS.RedissonLockError || err.lockName, String(err))
        assert.equal(err.cause && err.cause.code, 'ERR_REDIS_CONNECTION', err.message)
      }
      assert.equal(await keysLeft(prefix), 0)
    } finally {
      proxy.forward()
      await rs.quit()
    }
  }
})
