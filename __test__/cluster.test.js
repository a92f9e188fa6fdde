'use strict'

/**
 * Redis Cluster: 3 primaries + 3 replicas started here. Locks through
 * `{ cluster: [...] }`, an ioredis Cluster and a node-redis cluster client,
 * on keys spread over every slot; helper keys (fencing counters) in the
 * key's slot; autoExtend renewals through the cluster; a primary killed
 * mid-run, the cluster fails over, and locking goes on with no overlap.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const IORedis = require('ioredis')
const { createCluster } = require('redis4')
const R = require('..')
const RS = require('../redisson')
const { startCluster } = require('./helpers/cluster')
const { command, withClient } = require('./helpers/redis')
const { makeCertificates } = require('./helpers/tls')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { sleep } = require('./helpers/wait')

let cluster
let check

before(async () => {
  cluster = await startCluster({ masters: 3, replicas: 1 })
  check = new IORedis.Cluster(cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })))
})

after(async () => {
  if (check) check.disconnect()
  if (cluster) await cluster.stop()
})

test('{ cluster: [...] }: locks on keys spread over every primary', async () => {
  const lock = R.createLock({ cluster: cluster.seeds }, { timeout: 5000 })
  const slots = new Set()
  for (let i = 0; i < 60; i++) {
    const key = `cluster:spread:${i}`
    await lock.acquire(key)
    assert.equal(await check.get(key), lock._id, key)
    const other = R.createLock({ cluster: cluster.seeds })
    await assert.rejects(other.acquire(key), { name: 'LockAcquisitionError', message: `Could not acquire lock on "${key}"` })
    await lock.extend(6000)
    await lock.release()
    assert.equal(await check.exists(key), 0)
    slots.add(await check.cluster('KEYSLOT', key))
  }
  // 60 keys land on all three primaries' slot ranges.
  const ranges = (await check.cluster('SLOTS')).map(([from, to]) => [from, to])
  const hit = ranges.filter(([from, to]) => [...slots].some((s) => s >= from && s <= to))
  assert.equal(hit.length, ranges.length, 'every primary served some key')
})

test('an ioredis Cluster (with keyPrefix) and a node-redis cluster client are read, not refused', async () => {
  const ioCluster = new IORedis.Cluster([{ host: '127.0.0.1', port: Number(cluster.seeds[0].split(':')[1]) }], { keyPrefix: 'app:' })
  const nodeCluster = createCluster({ rootNodes: cluster.seeds.map((s) => ({ url: `redis://${s}` })) })
  nodeCluster.on('error', () => {})
  await nodeCluster.connect()
  try {
    const a = R.createLock(ioCluster)
    await a.acquire('cluster:client')
    assert.equal(await check.get('app:cluster:client'), a._id, 'the ioredis keyPrefix is applied')
    await a.release()
    const b = R.createLock(nodeCluster)
    await b.acquire('cluster:client')
    assert.equal(await check.get('cluster:client'), b._id)
    await b.release()
  } finally {
    ioCluster.disconnect()
    await nodeCluster.disconnect()
  }
})

/** Locks `a` and `b` take turns on 6 keys under `prefix`, each refused while the other holds; `get(key)` reads the cluster. */
async function excludeEachOther (a, b, prefix, get) {
  for (let i = 0; i < 6; i++) {
    const key = `${prefix}:${i}`
    await a.acquire(key)
    assert.equal(await get(key), a._id)
    await assert.rejects(b.acquire(key), { name: 'LockAcquisitionError' })
    await a.release()
    await b.acquire(key)
    await b.release()
  }
}

test('a password-protected cluster: the credentials are read from a connected node-redis cluster client and an ioredis Cluster', async () => {
  const secured = await startCluster({ masters: 3, password: 'cluster-secret' })
  const nodeCluster = createCluster({ rootNodes: [{ url: `redis://${secured.seeds[0]}` }], defaults: { password: 'cluster-secret' } })
  nodeCluster.on('error', () => {})
  const ioCluster = new IORedis.Cluster([{ host: '127.0.0.1', port: Number(secured.seeds[0].split(':')[1]) }], { redisOptions: { password: 'cluster-secret' } })
  try {
    await nodeCluster.connect()
    const a = R.createLock(nodeCluster, { timeout: 5000 })
    const b = R.createLock(ioCluster, { timeout: 5000 })
    await excludeEachOther(a, b, 'cluster:secured', (key) => nodeCluster.get(key))
    // Without the password: refused by the servers, with a clear error.
    const anonymous = R.createLock({ cluster: secured.seeds, connectTimeout: 500 })
    const err = await anonymous.acquire('cluster:secured:x').catch((e) => e)
    assert.ok(err instanceof R.LockAcquisitionError, String(err))
    assert.match(String(err.message) + String(err.cause && err.cause.message), /NOAUTH|auth|AUTH/)
  } finally {
    await nodeCluster.disconnect().catch(() => {})
    ioCluster.disconnect()
    await secured.stop()
  }
})

test('a TLS-only cluster with a custom CA: { cluster, tls: { ca } } and an ioredis Cluster with the same trust', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-cluster-tls-'))
  const certs = makeCertificates(dir)
  const secured = await startCluster({ masters: 3, tlsDir: dir })
  const ioCluster = new IORedis.Cluster([{ host: '127.0.0.1', port: Number(secured.seeds[0].split(':')[1]) }], { redisOptions: { tls: { ca: certs.ca } } })
  try {
    const a = R.createLock({ cluster: secured.seeds, tls: { ca: certs.ca } }, { timeout: 5000 })
    const b = R.createLock(ioCluster, { timeout: 5000 })
    await excludeEachOther(a, b, 'cluster:tls', (key) => ioCluster.get(key))
    // An unrelated CA is not enough: verification stays on.
    const untrusting = R.createLock({ cluster: secured.seeds, tls: { ca: certs.other }, connectTimeout: 1000 })
    await assert.rejects(untrusting.acquire('cluster:tls:x'), { name: 'LockAcquisitionError' })
  } finally {
    ioCluster.disconnect()
    await secured.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('fencing counters share the key\'s slot; autoExtend renews through the cluster', async () => {
  const lock = R.createLock({ cluster: cluster.seeds }, { timeout: 600, fencing: true, autoExtend: true })
  const tokens = []
  for (const key of ['cluster:fence:a', 'cluster:fence:b', '{user:1}:fence']) {
    await lock.acquire(key)
    tokens.push(lock.fencingToken)
    await lock.release()
    await lock.acquire(key)
    assert.equal(lock.fencingToken, tokens[tokens.length - 1] + 1n)
    await sleep(1000) // past the 600 ms lease: only renewals keep it
    assert.equal(await check.get(key), lock._id, `${key} kept by renewals`)
    assert.equal(lock.signal.aborted, false)
    await lock.release()
  }
})

test('fencing on keys with a \'}\' but no hash tag: the counter gets a tag in the key\'s slot', async () => {
  const lock = R.createLock({ cluster: cluster.seeds }, { timeout: 2000, fencing: true, wakeOnRelease: true })
  for (const key of ['order}42', '}', '{}', 'a{}b{c}']) {
    await lock.acquire(key)
    const first = lock.fencingToken
    assert.equal(await check.get(key), lock._id, key)
    await lock.release()
    await lock.acquire(key)
    assert.equal(lock.fencingToken, first + 1n, key)
    assert.equal((await R.inspect({ cluster: cluster.seeds }, key)).fencingToken, first + 1n, key)
    await lock.release()
  }
  // The name is part of the contract: existing counters keep counting.
  assert.equal(await check.cluster('KEYSLOT', '{4oZ}order}42:redislock-rs:fencing'), await check.cluster('KEYSLOT', 'order}42'))
  assert.ok(Number(await check.get('{4oZ}order}42:redislock-rs:fencing')) >= 2)
})

test('the Redisson face on the cluster: node-redisson\'s { clusters } config, re-entry, a waiter woken on release', async () => {
  const nodes = cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) }))
  const r = new RS.Redisson({ redis: { clusters: nodes }, lockWatchdogTimeout: 900n })
  try {
    for (const name of ['cluster:rs:a', 'cluster:rs:b', '{tag}:rs:c']) {
      const a = r.getLock(name, 'me')
      assert.equal(await a.tryLock(0, 10000), true)
      assert.equal(await a.tryLock(0, 10000), true, 're-entry')
      const hash = await check.hgetall(name)
      assert.deepEqual(Object.values(hash), ['2'])
      const waiter = r.getLock(name)
      const t0 = Date.now()
      const waiting = waiter.tryLock(8000, 5000)
      await sleep(100)
      await a.unlock()
      await a.unlock()
      assert.equal(await waiting, true)
      assert.ok(Date.now() - t0 < 3000, `woken on release: ${Date.now() - t0} ms`)
      await waiter.unlock()
      assert.equal(await check.exists(name), 0)
    }
    // A foreign holder (another process, say) and its release announced on
    // another node: only our subscription can tell the waiter.
    const name = 'cluster:rs:foreign'
    await check.hset(name, 'someone:else', '1')
    await check.pexpire(name, 20000)
    const waiter = r.getLock(name)
    const t0 = Date.now()
    const waiting = waiter.tryLock(8000, 5000)
    await sleep(200)
    await check.del(name)
    await check.publish(`redisson_lock__channel:{${name}}`, '0')
    assert.equal(await waiting, true)
    assert.ok(Date.now() - t0 < 3000, `woken by the announcement, not the 20 s lease: ${Date.now() - t0} ms`)
    await waiter.unlock()
    // The watchdog renews through the cluster.
    const w = r.getLock('cluster:rs:watchdog')
    await w.lock()
    await sleep(1500)
    assert.equal(await w.isLocked(), true)
    await w.unlock()
    // A name whose lock and channel would land in different slots: its
    // unlock could never run (CROSSSLOT), so it is refused up front; the
    // suggested hash-tagged name works.
    assert.throws(() => r.getLock('cluster:{rs}:odd'), { name: 'TypeError', message: /different slots.*"\{cluster:\{rs\}:odd\}"/ })
    const tagged = r.getLock('{cluster:{rs}:odd}')
    assert.equal(await tagged.tryLock(0, 5000), true)
    await tagged.unlock()
    assert.equal(await tagged.isLocked(), false)
  } finally {
    await r.quit()
  }
})

test('Java Redisson\'s read-write and fair locks on the cluster: every key of one lock in its slot, waiters woken across nodes', async () => {
  const nodes = cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) }))
  const r = new RS.Redisson({ redis: { clusters: nodes }, lockWatchdogTimeout: 900n })
  try {
    for (const name of ['cluster:rw:a', 'cluster:{rw}:b']) {
      const mine = r.getReadWriteLock(name, 'me')
      await mine.readLock().lock()
      await mine.readLock().lock(10000)
      assert.equal(await check.hget(name, 'mode'), 'read')
      const writer = r.getReadWriteLock(name, 'other').writeLock()
      const t0 = Date.now()
      const waiting = writer.tryLock(8000, 5000)
      await sleep(1500)
      assert.equal(await mine.readLock().isLocked(), true, 'the watchdog renews the reader through the cluster')
      await mine.readLock().unlock()
      await mine.readLock().unlock()
      assert.equal(await waiting, true)
      assert.ok(Date.now() - t0 < 5000, `woken on release: ${Date.now() - t0} ms`)
      await writer.unlock()
      assert.equal(await check.exists(name), 0)
    }
    const name = 'cluster:fair:c'
    const holder = r.getFairLock(name, 'h')
    await holder.lock(10000)
    const order = []
    const waiters = ['w1', 'w2'].map((id, i) => new Promise((resolve) => setTimeout(resolve, i * 200)).then(async () => {
      const lock = r.getFairLock(name, id)
      assert.equal(await lock.tryLock(8000, 5000), true)
      order.push(id)
      await lock.unlock()
    }))
    await sleep(600)
    assert.equal(await check.llen(`redisson_lock_queue:{${name}}`), 2)
    await holder.unlock()
    await Promise.all(waiters)
    assert.deepEqual(order, ['w1', 'w2'])
  } finally {
    await r.quit()
  }
})

test('Java Redisson\'s semaphores and count-down latch on the cluster: their keys in one slot, waiters woken across nodes', async () => {
  const nodes = cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) }))
  const r = new RS.Redisson({ redis: { clusters: nodes } })
  try {
    const sem = r.getSemaphore('cluster:sem:a')
    assert.equal(await sem.trySetPermits(1), true)
    assert.equal(await sem.tryAcquire(1), true)
    const t0 = Date.now()
    const waiting = sem.tryAcquire(1, 8000)
    await sleep(300)
    await sem.release(1)
    assert.equal(await waiting, true)
    assert.ok(Date.now() - t0 < 5000)
    assert.equal(await check.get('cluster:sem:a'), '0')

    const pes = r.getPermitExpirableSemaphore('cluster:pes:b')
    assert.equal(await pes.trySetPermits(1), true)
    const id = await pes.acquire(300)
    assert.match(id, /^[0-9a-f]{32}$/)
    assert.equal(await check.zcard('{cluster:pes:b}:timeout'), 1)
    // The permit's lease ends: it comes back to a waiter by itself.
    const next = await pes.tryAcquire(5000, 1000)
    assert.match(next, /^[0-9a-f]{32}$/)
    await pes.release(next)
    assert.equal(await pes.tryRelease(id), false)

    const latch = r.getCountDownLatch('cluster:latch:c')
    assert.equal(await latch.trySetCount(2), true)
    const done = latch.await(8000)
    await latch.countDown()
    await latch.countDown()
    assert.equal(await done, true)
    assert.equal(await latch.getCount(), 0)
  } finally {
    await r.quit()
  }
})

test('wakeOnRelease on the cluster: sharded pub/sub on the key\'s node wakes a waiter at once', async () => {
  const key = 'cluster:wake:{w1}'
  const channel = `${key}:redislock-rs:released`
  // Another endpoint (the seeds reversed): its release does not poke our
  // waiter in-process, so the wake-up must come through Redis.
  const holder = R.createLock({ cluster: [...cluster.seeds].reverse() }, { timeout: 20000, wakeOnRelease: true })
  const waiter = R.createLock({ cluster: cluster.seeds }, { timeout: 20000, wakeOnRelease: true, retries: 10, delay: 10000 })
  await holder.acquire(key)
  const t0 = Date.now()
  const waiting = waiter.acquire(key)
  const seed = Number(cluster.seeds[0].split(':')[1])
  const slot = await command(seed, 'CLUSTER', 'KEYSLOT', key)
  const owner = (await command(seed, 'CLUSTER', 'SLOTS')).find(([from, to]) => slot >= from && slot <= to)[2][1]
  let subscribed = 0
  for (let i = 0; i < 100 && subscribed === 0; i++) {
    await sleep(20)
    subscribed = (await command(owner, 'PUBSUB', 'SHARDNUMSUB', channel))[1]
  }
  assert.equal(subscribed, 1, 'the waiter is subscribed (SSUBSCRIBE) on the node that serves the key')
  await holder.release()
  await waiting
  assert.ok(Date.now() - t0 < 3000, `woken by the release, not the 10 s delay: ${Date.now() - t0} ms`)
  assert.equal(await command(owner, 'GET', key), waiter._id)
  await waiter.release()
})

/** `key` as the node on `port` holds it, asking as an importing node needs (ASKING first). */
async function heldOn (port, key) {
  return withClient({}, port, async (c) => {
    const [, [, value]] = await c.pipeline().call('ASKING').get(key).exec()
    return value
  })
}

test('a slot migrated under held locks: ASK during the migration, MOVED after it, no lock lost or doubled', async () => {
  const lock = R.createLock({ cluster: cluster.seeds }, { timeout: 30000 })
  const during = R.createLock({ cluster: cluster.seeds }, { timeout: 30000 })
  const key = 'cluster:migrate:{slot-a}'
  const newKey = 'cluster:migrate:{slot-a}:during'
  const seed = Number(cluster.seeds[0].split(':')[1])
  const slot = await command(seed, 'CLUSTER', 'KEYSLOT', key)
  // The primaries, by id and port, and which one serves the slot now.
  const primaries = (await command(seed, 'CLUSTER', 'NODES')).split('\n')
    .filter((line) => /\bmaster\b/.test(line) && !/fail/.test(line))
    .map((line) => { const [id, addr] = line.split(' '); return { id, port: Number(addr.split(':')[1].split('@')[0]) } })
  const owner = (await command(seed, 'CLUSTER', 'SLOTS')).find(([from, to]) => slot >= from && slot <= to)[2][1]
  const source = primaries.find((p) => p.port === owner)
  const target = primaries.find((p) => p.port !== owner)
  // Held on the source, so the client's slot map points there.
  await lock.acquire(key)

  // Migration started: the source still serves its keys and answers ASK for absent ones.
  await command(target.port, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id)
  await command(source.port, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id)
  await during.acquire(newKey) // ASK -> the importing target
  assert.equal(await heldOn(target.port, newKey), during._id, 'the new lock went to the importing node')
  // The source redirects for it: the client did follow an ASK.
  await assert.rejects(command(source.port, 'EXISTS', newKey), /^ReplyError: ASK /)
  await lock.extend(30000) // still on the source
  await command(source.port, 'MIGRATE', '127.0.0.1', target.port, '', 0, 5000, 'KEYS', key)
  assert.equal(await heldOn(target.port, key), lock._id, 'moved with its token')
  await assert.rejects(command(source.port, 'PTTL', key), /^ReplyError: ASK /)
  await lock.extend(30000) // the source now answers ASK for it
  const rival = R.createLock({ cluster: cluster.seeds })
  await assert.rejects(rival.acquire(key), { name: 'LockAcquisitionError' })
  await assert.rejects(rival.acquire(newKey), { name: 'LockAcquisitionError' })

  // Migration finished: the slot is the target's; the old owner answers MOVED.
  for (const p of primaries) await command(p.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', target.id)
  await cluster.settled()
  await assert.rejects(command(source.port, 'PTTL', key), /^ReplyError: MOVED /)
  await lock.extend(30000)
  await assert.rejects(rival.acquire(key), { name: 'LockAcquisitionError' })
  assert.ok(await command(target.port, 'PTTL', key) > 25000, 'extended on the new owner')
  await lock.release()
  await during.release()
  assert.equal(await command(target.port, 'EXISTS', key, newKey), 0, 'both released on the new owner')
  await rival.acquire(key)
  assert.equal(await command(target.port, 'GET', key), rival._id)
  await rival.release()
})

test('replicas: 1 on the cluster: WAIT on the key\'s primary; its replica paused, the grant is given back', async () => {
  const key = 'cluster:acked:{r1}'
  const lock = R.createLock({ cluster: cluster.seeds }, { timeout: 10000, replicas: 1, replicaTimeout: 300 })
  await lock.acquire(key)
  await lock.release()
  const seed = Number(cluster.seeds[0].split(':')[1])
  const slot = await command(seed, 'CLUSTER', 'KEYSLOT', key)
  const nodes = (await command(seed, 'CLUSTER', 'NODES')).split('\n').filter(Boolean).map((line) => line.split(' '))
  const owner = (await command(seed, 'CLUSTER', 'SLOTS')).find(([from, to]) => slot >= from && slot <= to)[2][1]
  const ownerId = nodes.find((n) => Number(n[1].split(':')[1].split('@')[0]) === owner)[0]
  const replicaPort = Number(nodes.find((n) => /slave/.test(n[2]) && n[3] === ownerId)[1].split(':')[1].split('@')[0])
  const replica = cluster.nodes.find((n) => n.port === replicaPort)
  process.kill(replica.pid, 'SIGSTOP')
  try {
    const t0 = Date.now()
    const err = await lock.acquire(key).catch((e) => e)
    assert.ok(err instanceof R.LockAcquisitionError, String(err))
    assert.match(err.message, /replicated to 0 of 1 replicas within 300 ms/)
    assert.ok(Date.now() - t0 < 2000, `failed after ${Date.now() - t0} ms`)
    assert.equal(await command(owner, 'EXISTS', key), 0, 'the grant was given back')
  } finally {
    process.kill(replica.pid, 'SIGCONT')
  }
  await cluster.settled()
})

test('a primary killed mid-run: the cluster fails over and locking goes on, with no overlap', async () => {
  const keys = Array.from({ length: 6 }, (_, i) => `cluster:failover:${i}`)
  const inside = new Map()
  let overlaps = 0
  let sections = 0
  let afterFailover = 0
  let failedOver = false
  let running = true
  const worker = async (w) => {
    const lock = R.createLock({ cluster: cluster.seeds, commandTimeout: 500, connectTimeout: 500 }, { timeout: 3000, retries: 20, delay: 50, wakeOnRelease: w % 2 === 0 })
    let k = w
    while (running) {
      const key = keys[k++ % keys.length]
      try {
        await lock.acquire(key)
      } catch (_) {
        await sleep(50)
        continue
      }
      if (inside.get(key)) overlaps++
      inside.set(key, true)
      await sleep(2)
      inside.set(key, false)
      sections++
      if (failedOver) afterFailover++
      await lock.release().catch(() => {})
    }
  }
  const workers = [0, 1, 2, 3].map(worker)
  await sleep(500)
  // Kill the primary that owns the first key's slot.
  const slot = await check.cluster('KEYSLOT', keys[0])
  const owner = (await check.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to)
  const victim = cluster.nodes.find((n) => n.port === owner[2][1])
  await victim.stop(true)
  await cluster.failedOver(slot, victim.port)
  failedOver = true
  const t0 = Date.now()
  // Wait for locking to resume (the clients refresh their slot maps).
  while (afterFailover < 30 && Date.now() - t0 < 15000) await sleep(100)
  console.log(`# failover: ${afterFailover} sections in the ${Date.now() - t0} ms after the cluster settled`)
  running = false
  await Promise.all(workers)
  assert.equal(overlaps, 0)
  assert.ok(afterFailover > 20, `locking went on after the failover: ${afterFailover} of ${sections}`)
})

test('the node-redlock face on the cluster: several resources in one slot are taken all or nothing; different slots are refused at once, naming them', async () => {
  const Redlock = require('../redlock')
  const redlock = new Redlock([{ cluster: cluster.seeds }], { retryCount: 0 })
  const lock = await redlock.lock(['{rl:order}:a', '{rl:order}:b'], 5000)
  assert.deepEqual(await check.mget('{rl:order}:a', '{rl:order}:b'), [lock.value, lock.value])
  await assert.rejects(redlock.lock(['{rl:order}:b'], 5000), { name: 'LockError', message: 'Exceeded 0 attempts to lock the resource "{rl:order}:b".' })
  await lock.unlock()
  assert.equal(await check.exists('{rl:order}:a'), 0)
  const [sa, sb] = [await check.cluster('KEYSLOT', 'rl:a'), await check.cluster('KEYSLOT', 'rl:b')]
  const err = await redlock.lock(['rl:a', 'rl:b'], 5000).then(() => null, (e) => e)
  assert.equal(err.name, 'LockError')
  assert.equal(err.attempts, 0)
  assert.ok(err.message.includes(`${sa} for rl:a, ${sb} for rl:b`), err.message)
  assert.equal(await check.exists('rl:a'), 0)
})

test('wakeOnRelease on the node-redlock face on the cluster: the release script\'s PUBLISH wakes a waiter on another connection at once', async () => {
  const Redlock = require('../redlock')
  // Other endpoints (seeds reversed): the word comes through the cluster, not in-process.
  const holder = new Redlock([{ cluster: [...cluster.seeds].reverse() }], { retryCount: 0, wakeOnRelease: true })
  const waiter = new Redlock([{ cluster: cluster.seeds }], { retryCount: 3, retryDelay: 10000, retryJitter: 0, wakeOnRelease: true })
  const keys = ['{rl:wake}:a', '{rl:wake}:b']
  const lock = await holder.lock(keys, 20000)
  const t0 = Date.now()
  const waiting = waiter.lock(keys, 20000)
  await new Promise((resolve) => setTimeout(resolve, 500))
  await lock.unlock()
  const got = await waiting
  const took = Date.now() - t0
  assert.ok(took < 5000, `woken by the release, not the 10 s retryDelay: ${took} ms`)
  assert.deepEqual(await check.mget(...keys), [got.value, got.value])
  await got.unlock()
  assert.equal(await check.exists(keys[0]), 0)
})

test('Web Locks on a cluster: names on every primary, granted in order, shared together, listed by query()', async () => {
  const { LockManager } = require('../web-locks')
  const a = new LockManager({ cluster: cluster.seeds }, { clientId: 'a', lease: 5000, prefix: 'wl-cluster:' })
  const b = new LockManager({ cluster: cluster.seeds }, { clientId: 'b', lease: 5000, prefix: 'wl-cluster:' })
  for (let i = 0; i < 12; i++) {
    const name = `cluster-name-${i}`
    const order = []
    let release
    const first = a.request(name, () => { order.push('a'); return new Promise((resolve) => { release = resolve }) })
    await sleep(20)
    const second = b.request(name, () => { order.push('b') })
    await sleep(30)
    const snapshot = await b.query()
    assert.deepEqual(snapshot.held.filter((h) => h.name === name).map((h) => h.clientId), ['a'], name)
    assert.deepEqual(snapshot.pending.filter((h) => h.name === name).map((h) => h.clientId), ['b'], name)
    release()
    await Promise.all([first, second])
    assert.deepEqual(order, ['a', 'b'], name)
  }
  let inside = 0
  let together = 0
  const shared = () => a.request('cluster-shared', { mode: 'shared' }, async () => {
    together = Math.max(together, ++inside)
    await sleep(50)
    inside--
  })
  await Promise.all([shared(), shared(), shared()])
  assert.equal(together, 3)
  const left = await a.query()
  assert.deepEqual([left.held.length, left.pending.length], [0, 0])
})
