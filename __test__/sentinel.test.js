'use strict'

/**
 * Sentinel: a primary, a replica and three sentinels started here. Locks
 * through `{ sentinels, name }` and an ioredis Sentinel client go to the
 * primary Sentinel names; the primary is killed, Sentinel fails over, and
 * the same lock objects lock on the new primary; with `replicas: 1`, a lock
 * acknowledged before the failover is still there after it.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const IORedis = require('ioredis')
const R = require('..')
const RS = require('../redisson')
const { startSentinels } = require('./helpers/sentinel')
const { freePort, command, withClient } = require('./helpers/redis')
const { createSentinel } = require('redis')
const { sleep, settle } = require('./helpers/wait')

let setup

before(async () => { setup = await startSentinels() })
after(async () => { if (setup) await setup.stop() })

test('wakeOnRelease waiters behind Sentinel subscribe on the primary, not on a sentinel', async () => {
  // The holder is another client (as another process would be): only the
  // waiter's subscription can tell it of the release.
  const opts = { sentinels: setup.addresses, name: setup.name }
  const other = new IORedis({ port: setup.primary.port })
  await other.set('sentinel:wake', 'someone-else', 'PX', 20000)
  const waiter = R.createLock(opts, { wakeOnRelease: true, retries: 5, delay: 3000 })
  const t0 = Date.now()
  const waiting = waiter.acquire('sentinel:wake')
  await sleep(300)
  await other.del('sentinel:wake')
  await other.publish('{sentinel:wake}:redislock-rs:released', '1')
  other.disconnect()
  await waiting
  assert.ok(Date.now() - t0 < 2500, `woken by the release, not the 3 s poll: ${Date.now() - t0} ms`)
  await waiter.release()
})

test('the Redisson face behind Sentinel: node-redisson options with sentinels, re-entry, a waiter woken', async () => {
  const r = new RS.Redisson({ redis: { options: { sentinels: setup.addresses.map((a) => ({ host: '127.0.0.1', port: Number(a.split(':')[1]) })), name: setup.name } } })
  try {
    const a = r.getLock('sentinel:rs', 'me')
    assert.equal(await a.tryLock(0, 10000), true)
    assert.equal(await a.tryLock(0, 10000), true)
    assert.deepEqual(Object.values(await withClient({}, setup.primary.port, (c) => c.hgetall('sentinel:rs'))), ['2'], 'on the primary')
    const waiter = r.getLock('sentinel:rs')
    const waiting = waiter.tryLock(8000, 5000)
    await sleep(100)
    await a.unlock()
    await a.unlock()
    assert.equal(await waiting, true)
    await waiter.unlock()
  } finally {
    await r.quit()
  }
})

/**
 * `promise`, or a rejection saying it was still pending after `ms` (so a
 * hung call fails the test instead of holding it). Resolves to
 * `{ err, ms }`: how it settled, and when.
 */
async function settled (promise, ms, what) {
  const r = await settle(promise, ms, what)
  assert.ok(r.err, `${what}: resolved, expected a rejection`)
  return { err: r.err, ms: r.ms }
}

/** Every face a Sentinel setup can be given to, each asked to lock once. */
function facesOf (sentinels, name, connectTimeout) {
  const nodes = sentinels.map((a) => ({ host: '127.0.0.1', port: Number(a.split(':')[1]) }))
  const timeouts = connectTimeout === undefined ? {} : { connectTimeout }
  return [
    ['{ sentinels, name }', async () => R.createLock({ sentinels, name, ...timeouts }).acquire('sentinel:bad')],
    ['an ioredis Sentinel client', async () => {
      const client = new IORedis({ sentinels: nodes, name, lazyConnect: true, ...timeouts })
      client.on('error', () => {})
      try {
        return await R.createLock(client).acquire('sentinel:bad')
      } finally {
        client.disconnect()
      }
    }],
    ['the Redisson face', async () => {
      const r = new RS.Redisson({ redis: { options: { sentinels: nodes, name, ...timeouts } } })
      try {
        return await r.getLock('sentinel:bad').tryLock(0, 10000)
      } finally {
        await r.quit()
      }
    }]
  ]
}

test('sentinels that refuse the connection: every face rejects at once, naming them', async () => {
  const ports = [await freePort(), await freePort()]
  const sentinels = ports.map((p) => `127.0.0.1:${p}`)
  const times = {}
  for (const connectTimeout of [undefined, 5000]) {
    for (const [face, lock] of facesOf(sentinels, setup.name, connectTimeout)) {
      const what = `${face}, connectTimeout ${connectTimeout || 'default'}`
      const { err, ms } = await settled(lock(), 12000, what)
      times[what] = ms
      // Refused is known at once: no waiting for connectTimeout (2 s by default).
      assert.ok(ms < 1500, `${what}: rejected after ${ms} ms`)
      assert.match(err.message, /refused/, what)
      for (const s of sentinels) assert.ok(err.message.includes(s), `${what}: names ${s}: ${err.message}`)
      if (face === 'the Redisson face') assert.ok(err instanceof Error && err.lockName === 'sentinel:bad', what)
      else assert.ok(err instanceof R.LockAcquisitionError, `${what}: ${err}`)
      assert.equal(err.cause && err.cause.code, 'ERR_REDIS_CONNECTION', what)
    }
  }
  console.log('refused sentinels, ms to reject:', JSON.stringify(times))
})

test('a primary name no sentinel knows: every face rejects in one round trip, saying so', async () => {
  const times = {}
  for (const connectTimeout of [undefined, 5000]) {
    for (const [face, lock] of facesOf(setup.addresses, 'nosuchmaster', connectTimeout)) {
      const what = `${face}, connectTimeout ${connectTimeout || 'default'}`
      const { err, ms } = await settled(lock(), 12000, what)
      times[what] = ms
      // One round trip to each sentinel; never the whole connectTimeout.
      assert.ok(ms < 1000, `${what}: rejected after ${ms} ms`)
      assert.ok(err.message.includes(`no sentinel knows a primary named "nosuchmaster" (tried ${setup.addresses.join(', ')})`),
        `${what}: ${err.message}`)
      if (face !== 'the Redisson face') assert.ok(err instanceof R.LockAcquisitionError, `${what}: ${err}`)
      assert.equal(err.cause && err.cause.code, 'ERR_REDIS_CONNECTION', what)
    }
  }
  console.log('unknown primary name, ms to reject:', JSON.stringify(times))
})

test('locks go to the primary Sentinel names, through options, an ioredis and a node-redis Sentinel client; a failover is followed', async () => {
  const opts = { sentinels: setup.addresses, name: setup.name, connectTimeout: 1000, commandTimeout: 1000 }
  const lock = R.createLock(opts, { timeout: 20000, retries: 100, delay: 100 })
  await lock.acquire('sentinel:a')
  assert.equal(await command(setup.primary.port, 'GET', 'sentinel:a'), lock._id)
  await lock.release()

  const client = new IORedis({ sentinels: setup.addresses.map((a) => ({ host: '127.0.0.1', port: Number(a.split(':')[1]) })), name: setup.name, lazyConnect: true, keyPrefix: 'app:' })
  const viaClient = R.createLock(client)
  await viaClient.acquire('sentinel:b')
  assert.equal(await command(setup.primary.port, 'GET', 'app:sentinel:b'), viaClient._id)
  await viaClient.release()
  client.disconnect()

  // node-redis createSentinel(): its name and options are private; the
  // sentinel and primary it connected to are read, the name is asked of the
  // sentinels (one sentinel given: the others are learned from it).
  const nodeSentinel = createSentinel({ name: setup.name, sentinelRootNodes: [{ host: '127.0.0.1', port: Number(setup.addresses[1].split(':')[1]) }] })
  nodeSentinel.on('error', () => {})
  assert.throws(() => R.createLock(nodeSentinel), /call connect\(\) first/)
  await nodeSentinel.connect()
  const viaNodeRedis = R.createLock(nodeSentinel, { timeout: 20000, retries: 100, delay: 100 })
  await viaNodeRedis.acquire('sentinel:c')
  assert.equal(await command(setup.primary.port, 'GET', 'sentinel:c'), viaNodeRedis._id)
  assert.equal(await nodeSentinel.get('sentinel:c'), viaNodeRedis._id, 'the client and the lock see the same primary')
  await viaNodeRedis.release()
  await nodeSentinel.close()

  // The Redisson face on the same Sentinel setup.
  const redisson = new RS.Redisson({ redis: { options: { sentinels: setup.addresses.map((a) => ({ host: '127.0.0.1', port: Number(a.split(':')[1]) })), name: setup.name, connectTimeout: 1000, commandTimeout: 1000 } } })
  const rlock = redisson.getLock('sentinel:rs-failover', 'me')
  assert.equal(await rlock.tryLock(0, 10000), true)
  await rlock.unlock()

  // An acknowledged lock, then the primary dies.
  const acked = R.createLock(opts, { timeout: 20000, replicas: 1, replicaTimeout: 500 })
  await acked.acquire('sentinel:acked')
  const oldPrimary = setup.primary.port
  await setup.primary.stop(true)
  const deadline = Date.now() + 30000
  let now
  while ((now = await setup.primaryPort()) === oldPrimary || now === null) {
    assert.ok(Date.now() < deadline, 'Sentinel failed over')
    await sleep(100)
  }
  assert.equal(now, setup.replica.port)
  // The same lock objects lock on the new primary.
  await lock.acquire('sentinel:after')
  assert.equal(await command(setup.replica.port, 'GET', 'sentinel:after'), lock._id)
  await lock.release()
  await viaNodeRedis.acquire('sentinel:after-c')
  assert.equal(await command(setup.replica.port, 'GET', 'sentinel:after-c'), viaNodeRedis._id, 'the node-redis Sentinel lock followed the failover')
  await viaNodeRedis.release()
  // The same Redisson instance follows it too.
  assert.equal(await rlock.tryLock(0, 10000), true, 'the Redisson face locks on the new primary')
  assert.equal(await command(setup.replica.port, 'EXISTS', 'sentinel:rs-failover'), 1)
  await rlock.unlock()
  await redisson.quit()
  assert.equal(await command(setup.replica.port, 'GET', 'sentinel:acked'), acked._id, 'the acknowledged lock survived the failover')
  await acked.release()
})

test('Sentinel settings are checked', () => {
  assert.throws(() => R.createLock({ sentinels: [], name: 'mymaster' }), TypeError)
  assert.throws(() => R.createLock({ sentinels: ['127.0.0.1:1'] }), /name/)
  assert.throws(() => R.createLock({ sentinels: ['127.0.0.1:1'], name: 'mymaster', tls: { ca: 'PEM' } }), /custom TLS CA or client certificate/)
})
