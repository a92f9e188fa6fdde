'use strict'

/**
 * Java Redisson's read-write lock and fair lock on the Redisson face
 * (`getReadWriteLock`, `getFairLock`), on one real redis-server: their
 * semantics (shared reads, an exclusive writer, a writer's own reads,
 * re-entrancy, first come first served), wake-ups, the watchdog, crashed
 * holders and waiters, and Java Redisson's layout, both ways: a client
 * playing Java (helpers/java-redisson-locks.js: Java's scripts, keys and
 * arguments) against our objects, and what ours leave in Redis read as
 * Java reads it.
 */

const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const IORedis = require('ioredis')
const RS = require('../redisson')
const { useRedis } = require('./helpers/redis')
const { javaClient, prefixName } = require('./helpers/java-redisson-locks')
const { sleep } = require('./helpers/wait')
const { rejection } = require('./helpers/outcomes')

const opened = []
after(async () => {
  await Promise.allSettled(opened.map((r) => r.quit()))
})
const redis = useRedis()
let plain = null
after(() => plain && plain.quit())
function direct () {
  if (plain === null) plain = new IORedis({ port: redis.server.port, lazyConnect: false })
  return plain
}

function make (extra = {}) {
  const r = new RS.Redisson({ redis: { options: { host: '127.0.0.1', port: redis.server.port } }, ...extra })
  opened.push(r)
  return r
}

let seq = 0
const fresh = (what) => `rl-test:${what}:${process.pid}:${seq++}`

test('read locks are shared; a write lock excludes readers and writers', async () => {
  const [a, b, c] = [make(), make(), make()]
  const name = fresh('shared')
  const ra = a.getReadWriteLock(name).readLock()
  const rb = b.getReadWriteLock(name).readLock()
  const wc = c.getReadWriteLock(name).writeLock()
  assert.equal(await ra.tryLock(0, 10000), true)
  assert.equal(await rb.tryLock(0, 10000), true)
  assert.equal(await wc.tryLock(0, 10000), false)
  assert.equal(await wc.isLocked(), false)
  assert.equal(await ra.isLocked(), true)
  await ra.unlock()
  assert.equal(await wc.tryLock(0, 10000), false, 'one reader is left')
  await rb.unlock()
  assert.equal(await wc.tryLock(0, 10000), true)
  assert.equal(await wc.isLocked(), true)
  assert.equal(await ra.tryLock(0, 10000), false, 'a reader waits for the writer')
  assert.equal(await b.getReadWriteLock(name).writeLock().tryLock(0, 10000), false)
  await wc.unlock()
  assert.equal(await direct().exists(name), 0)
  assert.equal(await ra.tryLock(0, 10000), true)
  await ra.unlock()
})

test('a writer may read too (Redisson downgrade) and keeps reading after its write unlock', async () => {
  const [a, b] = [make(), make()]
  const name = fresh('downgrade')
  const rw = a.getReadWriteLock(name)
  assert.equal(await rw.writeLock().tryLock(0, 10000), true)
  assert.equal(await rw.readLock().tryLock(0, 10000), true)
  assert.equal(await b.getReadWriteLock(name).readLock().tryLock(0, 10000), false, 'others wait while it writes')
  await rw.writeLock().unlock()
  assert.equal(await direct().hget(name, 'mode'), 'read')
  assert.equal(await b.getReadWriteLock(name).readLock().tryLock(0, 10000), true, 'others may read now')
  assert.equal(await b.getReadWriteLock(name).writeLock().tryLock(0, 10000), false)
  await rw.readLock().unlock()
})

test('read and write locks are re-entrant per client; unlock by a non-holder rejects', async () => {
  const a = make()
  const name = fresh('reentrant')
  const rw = a.getReadWriteLock(name, 'c1')
  const field = `${a._id}:c1`
  await rw.readLock().lock(10000)
  await rw.readLock().lock(10000)
  assert.equal(await direct().hget(name, field), '2')
  assert.ok(await direct().pttl(`{${name}}:${field}:rwlock_timeout:2`) > 0)
  await rw.readLock().unlock()
  assert.equal(await direct().hget(name, field), '1')
  assert.equal(await direct().exists(`{${name}}:${field}:rwlock_timeout:2`), 0)
  await rw.readLock().unlock()
  assert.equal(await direct().exists(name), 0)
  const err = await rejection(rw.readLock().unlock())
  assert.ok(err instanceof RS.RedissonLockError)
  assert.match(err.message, /not locked by current client/)

  await rw.writeLock().lock(10000)
  await rw.writeLock().lock(10000)
  assert.equal(await direct().hget(name, `${field}:write`), '2')
  await rw.writeLock().unlock()
  assert.equal(await rw.writeLock().isLocked(), true)
  await rw.writeLock().unlock()
  assert.equal(await rw.writeLock().isLocked(), false)
  assert.ok((await rejection(a.getReadWriteLock(name, 'other').writeLock().unlock())) instanceof RS.RedissonLockError)
})

test('a waiting writer wakes when the last reader leaves, long before the readers\' leases end', async () => {
  const [a, b] = [make(), make()]
  const name = fresh('wake')
  const reader = a.getReadWriteLock(name).readLock()
  await reader.lock(30000)
  const writer = b.getReadWriteLock(name).writeLock()
  const started = Date.now()
  const waiting = writer.tryLock(20000, 10000)
  await sleep(300)
  await reader.unlock()
  assert.equal(await waiting, true)
  assert.ok(Date.now() - started < 15000, 'woken by the release, not by the reader\'s lease')
  // And a reader waiting on the writer wakes on the write unlock.
  const reading = a.getReadWriteLock(name).readLock().tryLock(20000, 10000)
  await sleep(300)
  await writer.unlock()
  assert.equal(await reading, true)
  assert.ok(Date.now() - started < 15000)
})

test('the watchdog renews a reader\'s hold and its lease key; a crashed reader frees the lock at its lease end', async () => {
  const a = make({ lockWatchdogTimeout: 600 })
  const name = fresh('watchdog')
  const rw = a.getReadWriteLock(name, 'w')
  await rw.readLock().lock()
  await sleep(1500)
  assert.ok(await direct().pttl(name) > 0, 'the hash is renewed')
  assert.ok(await direct().pttl(`{${name}}:${a._id}:w:rwlock_timeout:1`) > 0, 'the hold\'s lease key is renewed')
  assert.equal(rw.readLock().signal.aborted, false)
  await rw.readLock().unlock()
  assert.equal(await direct().exists(name), 0)

  // A reader that never unlocks (a fixed lease): the writer gets in after it.
  const b = make()
  await b.getReadWriteLock(name).readLock().lock(400)
  const writer = a.getReadWriteLock(name).writeLock()
  assert.equal(await writer.tryLock(5000, 5000), true)
  await writer.unlock()
})

test('forceUnlock of a read or write lock removes only a lock in its mode', async () => {
  const a = make()
  const name = fresh('force')
  const rw = a.getReadWriteLock(name)
  await rw.readLock().lock(10000)
  assert.equal(await rw.writeLock().forceUnlock(), false)
  assert.equal(await rw.readLock().forceUnlock(), true)
  assert.equal(await direct().exists(name), 0)
  await rw.writeLock().lock(10000)
  assert.equal(await rw.readLock().forceUnlock(), false)
  assert.equal(await rw.writeLock().forceUnlock(), true)
})

test('layout: a Java reader and writer (Java\'s scripts) and ours exclude each other on one hash', async () => {
  const a = make()
  const name = fresh('java-rw')
  const java = javaClient(direct(), 'java-uuid', 7)
  // Java reads; our reader shares, our writer waits and wakes on Java's unlock.
  assert.equal(await java.readTry(name, 10000), null)
  assert.deepEqual(await direct().hgetall(name), { mode: 'read', [java.field]: '1' })
  const ours = a.getReadWriteLock(name, 'c')
  assert.equal(await ours.readLock().tryLock(0, 10000), true)
  assert.deepEqual(await direct().hgetall(name), { mode: 'read', [java.field]: '1', [`${a._id}:c`]: '1' })
  assert.ok(await direct().pttl(`{${name}}:${a._id}:c:rwlock_timeout:1`) > 0)
  assert.notEqual(await java.writeTry(name, 10000), null, 'Java\'s writer waits for our reader')
  await ours.readLock().unlock()
  const writer = make().getReadWriteLock(name).writeLock()
  const started = Date.now()
  const waiting = writer.tryLock(20000, 10000)
  await sleep(300)
  assert.equal(await java.readUnlock(name, 'l1'), 1, 'the last reader left')
  assert.equal(await waiting, true)
  assert.ok(Date.now() - started < 9000, 'woken by Java\'s publish on redisson_rwlock:{name}')
  const fields = await direct().hgetall(name)
  assert.equal(fields.mode, 'write')
  assert.equal(Object.keys(fields).filter((f) => f.endsWith(':write')).length, 1)
  // Java's reader and writer see our writer.
  assert.notEqual(await java.readTry(name, 10000), null)
  assert.notEqual(await java.writeTry(name, 10000), null)
  await writer.unlock()
  // Java writes; ours wait, and wake on Java's write unlock (message 1).
  assert.equal(await java.writeTry(name, 10000), null)
  assert.equal(await direct().hget(name, java.writeField), '1')
  const reading = ours.readLock().tryLock(20000, 10000)
  await sleep(300)
  assert.equal(await java.writeUnlock(name, 'l2'), 1)
  assert.equal(await reading, true)
  await ours.readLock().unlock()
  assert.equal(await direct().exists(name), 0)
})

test('a freed lock wakes one waiter, as Java Redisson\'s LockPubSub does; a write unlock wakes every reader', async () => {
  const name = fresh('one-at-a-time')
  const channel = `redisson_lock__channel:{${name}}`
  // A holder elsewhere (node-redisson's layout), released with its announcement.
  await direct().hset(name, 'elsewhere:1', '1')
  await direct().pexpire(name, 30000)
  const a = make()
  const waiters = Array.from({ length: 8 }, (_, i) => a.getLock(name, `w${i}`))
  const got = waiters.map((w) => w.tryLock(20000, 10000))
  await sleep(500)
  const evalshas = async () => Number(((await direct().info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/) || [0, 0])[1])
  const before = await evalshas()
  await direct().del(name)
  await direct().publish(channel, '0')
  await sleep(500)
  const attempts = (await evalshas()) - before
  assert.ok(attempts >= 1 && attempts <= 2, `one waiter tried the freed lock, not all 8 (${attempts} attempts)`)
  // Each release hands the lock on: all eight get it in turn.
  for (let i = 0; i < 8; i++) {
    const winner = (await Promise.race(got.map((p, j) => p.then(() => j))))
    assert.equal(await got[winner], true)
    await waiters[winner].unlock()
    got[winner] = new Promise(() => {})
  }
})

test('a fair lock serves waiters in arrival order, on Java Redisson\'s queue', async () => {
  const name = fresh('fair')
  const a = make()
  const first = a.getFairLock(name, 'holder')
  await first.lock(30000)
  const order = []
  const waiters = []
  const fields = []
  for (let i = 0; i < 4; i++) {
    const r = make()
    const lock = r.getFairLock(name, `w${i}`)
    fields.push(`${r._id}:w${i}`)
    waiters.push(lock.tryLock(20000, 10000).then(async (got) => {
      order.push(i)
      await sleep(20)
      await lock.unlock()
      return got
    }))
    // Each one queued before the next arrives.
    for (let t = 0; t < 100 && (await direct().llen(prefixName('redisson_lock_queue', name))) < i + 1; t++) await sleep(10)
  }
  assert.deepEqual(await direct().lrange(prefixName('redisson_lock_queue', name), 0, -1), fields)
  assert.equal(await direct().zcard(prefixName('redisson_lock_timeout', name)), 4)
  await first.unlock()
  assert.deepEqual(await Promise.all(waiters), [true, true, true, true])
  assert.deepEqual(order, [0, 1, 2, 3])
  assert.equal(await direct().exists(name, prefixName('redisson_lock_queue', name), prefixName('redisson_lock_timeout', name)), 0)
})

test('a fair waiter keeps its place however long it waits; one that gives up leaves the queue', async () => {
  // The holder's lease is short and renewed: Redisson's waiter deadline
  // (the lease left plus the waiter timeout) passes long before it ends.
  const a = make({ lockWatchdogTimeout: 300, fairLockWaitTimeout: 300 })
  const name = fresh('fair-keep')
  const holder = a.getFairLock(name, 'h')
  await holder.lock()
  const b = make({ fairLockWaitTimeout: 300 })
  const order = []
  const early = b.getFairLock(name, 'early')
  const w1 = early.tryLock(10000, 5000).then((got) => { order.push('early'); return got })
  await sleep(100)
  const late = make({ fairLockWaitTimeout: 300 }).getFairLock(name, 'late')
  const w2 = late.tryLock(10000, 5000).then((got) => { order.push('late'); return got })
  await sleep(1500)
  const queue = await direct().lrange(prefixName('redisson_lock_queue', name), 0, -1)
  assert.deepEqual(queue.map((f) => f.split(':').pop()), ['early', 'late'])
  await holder.unlock()
  assert.equal(await w1, true)
  await early.unlock()
  assert.equal(await w2, true)
  await late.unlock()
  assert.deepEqual(order, ['early', 'late'])

  // A waiter that gives up (its wait ends) leaves the queue at once.
  await holder.lock(10000)
  assert.equal(await early.tryLock(300, 5000), false)
  assert.equal(await direct().llen(prefixName('redisson_lock_queue', name)), 0)
  assert.equal(await direct().zcard(prefixName('redisson_lock_timeout', name)), 0)
  await holder.unlock()
})

test('layout: a dead Java waiter ahead is served first until its deadline; Java\'s unlock wakes ours', async () => {
  const a = make()
  const name = fresh('fair-java')
  const java = javaClient(direct(), 'java-uuid', 3)
  const holder = a.getFairLock(name, 'h')
  await holder.lock(2000)
  // A Java waiter queues (its deadline: the lease left plus its 1 s waiter
  // timeout) and dies.
  const ttl = await java.fairTry(name, 10000, 1000)
  assert.ok(ttl > 0)
  const queuedAt = Date.now()
  assert.deepEqual(await direct().lrange(prefixName('redisson_lock_queue', name), 0, -1), [java.field])
  const ro = make()
  const ours = ro.getFairLock(name, 'o')
  const waiting = ours.tryLock(15000, 5000)
  await sleep(200)
  await holder.unlock()
  assert.equal(await waiting, true)
  const waited = Date.now() - queuedAt
  assert.ok(waited >= 1500, `first come, first served: it waited for the Java waiter's turn (${waited} ms)`)
  assert.ok(waited < 8000, `and no longer than its deadline (${waited} ms)`)
  assert.deepEqual(await direct().lrange(prefixName('redisson_lock_queue', name), 0, -1), [])
  await ours.unlock()

  // Java holds; ours queues behind and is woken on its own channel by Java's unlock.
  assert.equal(await java.fairTry(name, 30000, 5000), null)
  const started2 = Date.now()
  const waiting2 = ours.tryLock(20000, 5000)
  await sleep(300)
  assert.deepEqual(await direct().lrange(prefixName('redisson_lock_queue', name), 0, -1), [`${ro._id}:o`])
  assert.equal(await java.fairUnlock(name, 'u1'), 1)
  assert.equal(await waiting2, true)
  assert.ok(Date.now() - started2 < 15000, 'woken by Java\'s publish to redisson_lock__channel:{name}:<field>')
  // And Java's attempt sees ours.
  assert.notEqual(await java.fairTry(name, 30000, 5000), null)
  await ours.unlock()
})

test('a fair waiter whose process is killed holds the queue up for one waiter timeout, not the lease', async () => {
  const a = make()
  const name = fresh('fair-killed')
  const holder = a.getFairLock(name, 'h')
  await holder.lock(30000)
  const child = spawn(process.execPath, ['-e', `
    const { Redisson } = require(${JSON.stringify(path.join(__dirname, '..', 'redisson'))})
    const r = new Redisson({ redis: { options: { port: ${redis.server.port} } }, fairLockWaitTimeout: 1000 })
    r.getFairLock(${JSON.stringify(name)}, 'doomed').tryLock(60000, 5000)
  `], { stdio: 'ignore' })
  const queue = prefixName('redisson_lock_queue', name)
  for (let t = 0; t < 500 && (await direct().llen(queue)) < 1; t++) await sleep(20)
  assert.equal(await direct().llen(queue), 1, 'the child queued')
  const ours = make({ fairLockWaitTimeout: 1000 }).getFairLock(name, 'next')
  const waiting = ours.tryLock(20000, 5000)
  for (let t = 0; t < 200 && (await direct().llen(queue)) < 2; t++) await sleep(10)
  await new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGKILL') })
  const started = Date.now()
  await holder.unlock()
  assert.equal(await waiting, true)
  // Redisson would wait for the lease left when it queued (≈ 30 s) plus
  // one waiter timeout.
  assert.ok(Date.now() - started < 10000, `served after the dead waiter's timeout (${Date.now() - started} ms)`)
  await ours.unlock()
})

test('fair lock: one-shot tryLock never queues; unlock of an expired fair lock rejects; forceUnlock', async () => {
  const a = make()
  const name = fresh('fair-once')
  const h = a.getFairLock(name, 'h')
  await h.lock(10000)
  const other = make().getFairLock(name, 'x')
  assert.equal(await other.tryLock(0, 1000), false)
  assert.equal(await direct().exists(prefixName('redisson_lock_queue', name)), 0)
  assert.equal(await h.isLocked(), true)
  assert.equal(await other.forceUnlock(), true)
  assert.equal(await h.isLocked(), false)
  const err = await rejection(h.unlock())
  assert.ok(err instanceof RS.RedissonLockError)
  await h.lock(200)
  await sleep(400)
  assert.ok((await rejection(h.unlock())) instanceof RS.RedissonLockError, 'expired: not "unlocked"')
})

test('bad arguments: names, clientIds and fairLockWaitTimeout', () => {
  const a = make()
  assert.throws(() => a.getReadWriteLock(''), { name: 'TypeError', message: /getReadWriteLock\(name\)/ })
  assert.throws(() => a.getFairLock(42), { name: 'TypeError', message: /getFairLock\(name\)/ })
  assert.throws(() => a.getFairLock('x', ''), TypeError)
  assert.throws(() => make({ fairLockWaitTimeout: 1.5 }), TypeError)
  assert.throws(() => make({ fairLockWaitTimeout: 0 }), RangeError)
  assert.throws(() => make({ fairLockWaitTimeout: '5000' }), TypeError)
  assert.equal(make({ fairLockWaitTimeout: 2000n })._fairWaitMs, 2000)
})
