'use strict'

/**
 * Java Redisson's RSemaphore, RPermitExpirableSemaphore and RCountDownLatch
 * on the Redisson face, against one real redis-server: their semantics,
 * waits woken by another Redisson instance, timeouts, expired permits
 * coming back, bad arguments, and the data layout: Redis is driven with the
 * exact scripts and arguments Java Redisson 4.7.1-SNAPSHOT (66863978b4a9)
 * sends (`JAVA` below, its string literals concatenated) and each side
 * must see what the other wrote.
 */

const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('crypto')
const IORedis = require('ioredis')
const RS = require('../redisson')
const { useRedis } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')

const opened = []
// Registered before useRedis's own hook, so it runs before the server stops.
after(async () => {
  await Promise.allSettled(opened.map((r) => r.quit()))
})
const redis = useRedis()

function make (extra = {}) {
  const r = new RS.Redisson({ redis: { options: { host: '127.0.0.1', port: redis.server.port } }, ...extra })
  opened.push(r)
  return r
}

let seq = 0
const fresh = (what) => `rs-sync:${what}:${process.pid}:${seq++}`
const { TimeUnit } = RS

// Java Redisson's scripts, byte for byte (RedissonSemaphore.java,
// RedissonPermitExpirableSemaphore.java, RedissonCountDownLatch.java).
const JAVA = {
  SEM_TRY_ACQUIRE: "local value = redis.call('get', KEYS[1]); if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then local val = redis.call('decrby', KEYS[1], ARGV[1]); return 1; end; return 0;",
  SEM_RELEASE: "local value = redis.call('incrby', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], value); ",
  SEM_DRAIN: "local value = redis.call('get', KEYS[1]); if (value == false) then return 0; end; redis.call('set', KEYS[1], 0); return value;",
  TRY_SET_PERMITS: "local value = redis.call('get', KEYS[1]); if (value == false) then redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1;end;return 0;",
  SEM_ADD_PERMITS: "local value = redis.call('get', KEYS[1]); if (value == false) then value = 0;end;redis.call('set', KEYS[1], value + ARGV[1]); redis.call(ARGV[2], KEYS[2], value + ARGV[1]); ",
  PES_TRY_ACQUIRE: "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[5], KEYS[3], value); end;end; local value = redis.call('get', KEYS[1]); if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then redis.call('decrby', KEYS[1], ARGV[1]); for i = 6, #ARGV, 1 do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); end; local ttl = redis.call('pttl', KEYS[1]); if ttl > 0 then redis.call('pexpire', KEYS[2], ttl); end; return 'OK'; end; local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); if v[1] ~= nil and v[2] ~= ARGV[4] then return ':' .. tostring(v[2]); end return nil;",
  PES_TRY_RELEASE: "local expire = redis.call('zscore', KEYS[3], ARGV[1]);local removed = redis.call('zrem', KEYS[3], ARGV[1]);if tonumber(removed) ~= 1 then return 0;end;local value = redis.call('incrby', KEYS[1], ARGV[2]); redis.call(ARGV[4], KEYS[2], value); if tonumber(expire) <= tonumber(ARGV[3]) then return 0;end;return 1;",
  PES_AVAILABLE: "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[2], KEYS[3], value); end;return value; end; local ret = redis.call('get', KEYS[1]); return ret == false and 0 or ret;",
  PES_ADD_PERMITS: "local value = redis.call('get', KEYS[1]); if (value == false) then value = 0;end;redis.call('set', KEYS[1], tonumber(value) + tonumber(ARGV[1])); if tonumber(ARGV[1]) > 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]); end;",
  PES_UPDATE_LEASE: "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[4], KEYS[3], value); end;end; local value = redis.call('zscore', KEYS[2], ARGV[1]); if (value ~= false) then redis.call('zadd', KEYS[2], ARGV[2], ARGV[1]); return 1;end;return 0;",
  SEM_RELEASE_IF_EXISTS: "if redis.call('exists', KEYS[1]) == 0 then return 0 end local value = redis.call('incrby', KEYS[1], ARGV[1]) redis.call(ARGV[2], KEYS[2], value) return 1 ",
  TRY_SET_PERMITS_TTL: "local value = redis.call('get', KEYS[1]); if (value == false) then redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1;end;return 0;",
  PES_GET_PERMITS: "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[2], KEYS[3], value); end;end; local available = redis.call('get', KEYS[1]); if available == false then return 0 end;local acquired = redis.call('zcount', KEYS[2], 0, '+inf'); if acquired == false then return tonumber(available) end;return tonumber(available) + acquired;",
  PES_ACQUIRED_PERMITS: "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[2], KEYS[3], value); end;end; local acquired = redis.call('zcount', KEYS[2], 0, '+inf'); return acquired == false and 0 or acquired;",
  PES_SET_PERMITS: "local available = redis.call('get', KEYS[1]); if (available == false) then redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return;end;local acquired = redis.call('zcount', KEYS[3], 0, '+inf'); local maximum = (acquired == false and 0 or acquired) + tonumber(available); if (maximum == tonumber(ARGV[1])) then return;end;redis.call('incrby', KEYS[1], tonumber(ARGV[1]) - maximum); redis.call(ARGV[2], KEYS[2], ARGV[1]);",
  PES_GET_LEASE_TIME: "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[4], KEYS[3], value); end;end; local value = redis.call('zscore', KEYS[2], ARGV[1]); if (value ~= false) then return tonumber(value) == tonumber(ARGV[2]) and -1 or tonumber(value) - tonumber(ARGV[3]);end;return 0;",
  LATCH_COUNT_DOWN: "local v = redis.call('decr', KEYS[1]);if v <= 0 then redis.call('del', KEYS[1]) end;if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;",
  LATCH_TRY_SET_COUNT: "if redis.call('exists', KEYS[1]) == 0 then redis.call('set', KEYS[1], ARGV[2]); redis.call(ARGV[3], KEYS[2], ARGV[1]); return 1 else return 0 end"
}

const sha1 = (s) => crypto.createHash('sha1').update(s).digest('hex')
const NON_EXPIRABLE = '922337203685477'

/** Runs Java's script `name` as Java Redisson sends it. */
function java (name, keys, args) {
  return redis.check.eval(JAVA[name], keys.length, ...keys, ...args)
}

/** A subscriber on `channel` collecting its messages. */
async function listen (channel) {
  const sub = new IORedis({ port: redis.server.port })
  opened.push(sub)
  const messages = []
  sub.on('message', (ch, msg) => { if (ch === channel) messages.push(msg) })
  await sub.subscribe(channel)
  return { messages, close: () => sub.quit() }
}

async function until (what, fn, ms = 2000) {
  const end = Date.now() + ms
  while (!(await fn())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

test('RSemaphore: set, take, give back, add, drain', async () => {
  const s = make().getSemaphore(fresh('sem'))
  assert.equal(s.name.startsWith('rs-sync:sem:'), true)
  assert.equal(await s.availablePermits(), 0)
  assert.equal(await s.tryAcquire(), false)
  assert.equal(await s.trySetPermits(3), true)
  assert.equal(await s.trySetPermits(5), false)
  assert.equal(await s.availablePermits(), 3)
  assert.equal(await s.tryAcquire(2), true)
  assert.equal(await s.tryAcquire(2), false)
  assert.equal(await s.tryAcquire(0), true, 'no permits: at once, as Java')
  await s.acquire()
  assert.equal(await s.availablePermits(), 0)
  await s.release(3)
  assert.equal(await s.availablePermits(), 3)
  await s.addPermits(4)
  assert.equal(await s.availablePermits(), 7)
  await s.addPermits(-2)
  assert.equal(await s.availablePermits(), 5)
  assert.equal(await s.drainPermits(), 5)
  assert.equal(await s.availablePermits(), 0)
  assert.equal(await s.drainPermits(), 0)
  await s.release(0)
  await s.acquire(0)
})

test('RSemaphore: a waiter is woken by a release from another Redisson instance', async () => {
  const name = fresh('sem-wake')
  const a = make().getSemaphore(name)
  const b = make().getSemaphore(name)
  assert.equal(await a.trySetPermits(0), true)
  const started = Date.now()
  const waiting = b.tryAcquire(2, 5, TimeUnit.SECONDS)
  const forever = b.acquire()
  await sleep(150)
  await a.release(3)
  assert.equal(await waiting, true)
  await forever
  const took = Date.now() - started
  // Woken by the message, not by the 1 s safety net.
  assert.ok(took < 800, `took ${took} ms`)
  assert.equal(await a.availablePermits(), 0)
})

test('RSemaphore: a wait ends at its deadline; no waitTime is one attempt', async () => {
  const s = make().getSemaphore(fresh('sem-timeout'))
  await s.trySetPermits(1)
  let t = Date.now()
  assert.equal(await s.tryAcquire(2), false)
  assert.ok(Date.now() - t < 1000, 'no wait')
  t = Date.now()
  assert.equal(await s.tryAcquire(2, 300), false)
  const took = Date.now() - t
  assert.ok(took >= 290 && took < 3000, `took ${took} ms: ended at its deadline`)
  assert.equal(await s.availablePermits(), 1)
})

test('RSemaphore: releaseIfExists gives permits back only to an existing count', async () => {
  const name = fresh('sem-if-exists')
  const s = make().getSemaphore(name)
  assert.equal(await s.releaseIfExists(), false, 'no count: nothing released')
  assert.equal(await redis.check.exists(name), 0, 'and no count made')
  assert.equal(await s.trySetPermits(0), true)
  assert.equal(await s.releaseIfExists(), true)
  assert.equal(await s.releaseIfExists(2), true)
  assert.equal(await s.availablePermits(), 3)
  assert.equal(await s.releaseIfExists(0), false, '0 permits: false at once, as Java')
  assert.equal(await s.availablePermits(), 3)
  // A waiter of the same process is woken at once.
  await s.drainPermits()
  const t = Date.now()
  const waiting = s.tryAcquire(2, 5000)
  await sleep(100)
  assert.equal(await s.releaseIfExists(2), true)
  assert.equal(await waiting, true)
  assert.ok(Date.now() - t < 800)
})

test('RSemaphore: trySetPermits with a time to live', async () => {
  const name = fresh('sem-ttl')
  const s = make().getSemaphore(name)
  assert.equal(await s.trySetPermits(4, 300), true)
  const pttl = await redis.check.pttl(name)
  assert.ok(pttl > 0 && pttl <= 300, `pttl ${pttl}`)
  assert.equal(await s.trySetPermits(9, 10, TimeUnit.SECONDS), false, 'already set')
  assert.equal(await s.availablePermits(), 4)
  await sleep(350)
  assert.equal(await s.availablePermits(), 0, 'the count expired')
  assert.equal(await s.trySetPermits(2, 1n, TimeUnit.MINUTES), true)
  const later = await redis.check.pttl(name)
  assert.ok(later > 55000 && later <= 60000, `pttl ${later}`)
  // No ttl (undefined or null): no expiry.
  const plain = fresh('sem-ttl')
  assert.equal(await make().getSemaphore(plain).trySetPermits(1, null), true)
  assert.equal(await redis.check.pttl(plain), -1)
})

test('RPermitExpirableSemaphore: getPermits, acquiredPermits, setPermits, getLeaseTime', async () => {
  const s = make().getPermitExpirableSemaphore(fresh('pes-counts'))
  assert.equal(await s.getPermits(), 0, 'none set')
  assert.equal(await s.acquiredPermits(), 0)
  assert.equal(await s.trySetPermits(3), true)
  const forever = await s.acquire()
  const leased = await s.acquire(10, TimeUnit.SECONDS)
  assert.equal(await s.getPermits(), 3)
  assert.equal(await s.acquiredPermits(), 2)
  assert.equal(await s.availablePermits(), 1)
  assert.equal(await s.getLeaseTime(forever), -1, 'no lease: -1')
  const left = await s.getLeaseTime(leased)
  assert.ok(left > 9000 && left <= 10000, `left ${left}`)
  assert.equal(await s.getLeaseTime(leased.toUpperCase()) <= left, true, 'ids in either case')
  // setPermits moves the free count by the difference, the held ones stay.
  await s.setPermits(5)
  assert.equal(await s.getPermits(), 5)
  assert.equal(await s.availablePermits(), 3)
  await s.setPermits(1)
  assert.equal(await s.getPermits(), 1)
  assert.equal(await s.availablePermits(), -1, 'more held than the new total: negative, as Java')
  assert.equal(await s.tryAcquire(), null)
  await s.release(forever)
  await s.release(leased)
  assert.equal(await s.availablePermits(), 1)
  assert.equal(await s.acquiredPermits(), 0)
  // Unknown, released: Redisson's message.
  for (const id of [forever, crypto.randomBytes(16).toString('hex')]) {
    await assert.rejects(s.getLeaseTime(id), (err) => {
      assert.ok(err instanceof RS.RedissonLockError)
      assert.match(err.message, new RegExp(`^Permit with id ${id} has already been released or doesn't exist\n`))
      return true
    })
  }
  // An unset semaphore: setPermits sets it.
  const fresh2 = make().getPermitExpirableSemaphore(fresh('pes-counts'))
  await fresh2.setPermits(2)
  assert.equal(await fresh2.availablePermits(), 2)
  await fresh2.setPermits(0)
  assert.equal(await fresh2.getPermits(), 0)
})

test('RPermitExpirableSemaphore: the counts and getLeaseTime sweep expired permits', async () => {
  const name = fresh('pes-sweep')
  const s = make().getPermitExpirableSemaphore(name)
  await s.trySetPermits(3)
  const a = await s.acquire(100)
  const b = await s.acquire(100)
  const c = await s.acquire(100)
  assert.equal(await s.acquiredPermits(), 3)
  await sleep(150)
  // Each look counts the expired permits back before it answers.
  assert.equal(await s.acquiredPermits(), 0)
  assert.equal(await redis.check.get(name), '3')
  await s.acquire(100)
  await sleep(150)
  assert.equal(await s.getPermits(), 3)
  assert.equal(await redis.check.zcard(`{${name}}:timeout`), 0)
  const d = await s.acquire(100)
  await sleep(150)
  await assert.rejects(s.getLeaseTime(d), /has already been released or doesn't exist/)
  assert.equal(await redis.check.get(name), '3', 'getLeaseTime counted it back')
  for (const id of [a, b, c]) assert.equal(await s.tryRelease(id), false)
})

test('RPermitExpirableSemaphore: ids, release, tryRelease, updateLeaseTime', async () => {
  const s = make().getPermitExpirableSemaphore(fresh('pes'))
  assert.equal(await s.tryAcquire(), null, 'no permits set')
  assert.equal(await s.trySetPermits(2), true)
  assert.equal(await s.trySetPermits(2), false)
  const a = await s.tryAcquire()
  assert.match(a, /^[0-9a-f]{32}$/)
  const b = await s.acquire(10, TimeUnit.SECONDS)
  assert.match(b, /^[0-9a-f]{32}$/)
  assert.notEqual(a, b)
  assert.equal(await s.availablePermits(), 0)
  assert.equal(await s.tryAcquire(), null)
  assert.equal(await s.tryAcquire(100, TimeUnit.MILLISECONDS), null, 'tryAcquire(waitTime, unit), as Java')
  assert.equal(await s.updateLeaseTime(b, 1, TimeUnit.MINUTES), true)
  await s.release(a)
  await assert.rejects(s.release(a), (err) => {
    assert.ok(err instanceof RS.RedissonLockError)
    assert.match(err.message, new RegExp(`^Permit with id ${a} has already been released or doesn't exist`))
    return true
  })
  assert.equal(await s.tryRelease(b), true)
  assert.equal(await s.tryRelease(b), false)
  assert.equal(await s.tryRelease(crypto.randomBytes(16).toString('hex')), false)
  assert.equal(await s.updateLeaseTime(b, 1000), false)
  assert.equal(await s.availablePermits(), 2)
  await s.addPermits(3)
  assert.equal(await s.availablePermits(), 5)
  await s.addPermits(-4)
  assert.equal(await s.availablePermits(), 1)
})

test('RPermitExpirableSemaphore: an expired permit comes back and wakes a waiter', async () => {
  const name = fresh('pes-expiry')
  const a = make().getPermitExpirableSemaphore(name)
  const b = make().getPermitExpirableSemaphore(name)
  await a.trySetPermits(1)
  const held = await a.acquire(400)
  assert.ok(held)
  const t = Date.now()
  // Nobody releases or publishes: the waiter wakes when the lease ends.
  const got = await b.tryAcquire(5000, 10000)
  const took = Date.now() - t
  assert.ok(got, 'the waiter got the expired permit')
  assert.ok(took >= 300 && took < 1200, `took ${took} ms`)
  assert.equal(await a.tryRelease(held), false, 'the expired permit is no longer held')
  assert.equal(await a.availablePermits(), 0)
  await b.release(got)
  // Expired permits come back on any look, without a waiter.
  const short = await a.acquire(100)
  assert.equal(await a.availablePermits(), 0)
  await sleep(150)
  assert.equal(await a.availablePermits(), 1)
  assert.equal(await a.tryRelease(short), false)
})

test('RPermitExpirableSemaphore: a waiter is woken by a release from another instance', async () => {
  const name = fresh('pes-wake')
  const a = make().getPermitExpirableSemaphore(name)
  const b = make().getPermitExpirableSemaphore(name)
  await a.trySetPermits(1)
  const held = await a.acquire()
  const t = Date.now()
  const waiting = b.acquire()
  await sleep(150)
  await a.release(held)
  const got = await waiting
  assert.match(got, /^[0-9a-f]{32}$/)
  assert.ok(Date.now() - t < 800)
})

test('RCountDownLatch: set, count down, await', async () => {
  const name = fresh('latch')
  const a = make().getCountDownLatch(name)
  const b = make().getCountDownLatch(name)
  assert.equal(await a.getCount(), 0)
  assert.equal(await a.await(), true, 'an unset latch is open')
  assert.equal(await a.trySetCount(2), true)
  assert.equal(await a.trySetCount(5), false)
  assert.equal(await a.getCount(), 2)
  let t = Date.now()
  assert.equal(await a.await(200), false)
  assert.ok(Date.now() - t >= 190)
  assert.equal(await a.await(0), false)
  t = Date.now()
  const forever = b.await()
  const bounded = b.await(5, TimeUnit.SECONDS)
  await sleep(100)
  await a.countDown()
  await sleep(100)
  await a.countDown()
  assert.equal(await forever, true)
  assert.equal(await bounded, true)
  assert.ok(Date.now() - t < 800)
  assert.equal(await a.getCount(), 0)
  assert.equal(await redis.check.exists(name), 0, 'deleted at zero')
  await a.countDown()
  assert.equal(await a.getCount(), 0)
})

test('bad arguments reject with TypeError or RangeError naming the argument', async () => {
  const r = make()
  const s = r.getSemaphore(fresh('bad'))
  const p = r.getPermitExpirableSemaphore(fresh('bad'))
  const l = r.getCountDownLatch(fresh('bad'))
  const cases = [
    [() => s.trySetPermits(-1), RangeError, /permits/],
    [() => s.trySetPermits(1.5), RangeError, /permits/],
    [() => s.trySetPermits('3'), TypeError, /permits/],
    [() => s.tryAcquire(-1), RangeError, /permits/],
    [() => s.tryAcquire(1, -5), RangeError, /waitTime/],
    [() => s.tryAcquire(1, 'soon'), TypeError, /waitTime/],
    [() => s.tryAcquire(1, 10, 'ms'), TypeError, /unit/],
    [() => s.acquire(2 ** 31), RangeError, /permits/],
    [() => s.release(NaN), RangeError, /permits/],
    [() => s.addPermits(Infinity), RangeError, /permits/],
    [() => p.trySetPermits(-2), RangeError, /permits/],
    [() => p.acquire(0), RangeError, /leaseTime/],
    [() => p.acquire(10, {}), TypeError, /unit/],
    [() => p.tryAcquire(-1), RangeError, /waitTime/],
    [() => p.tryAcquire(10, 1.5), RangeError, /leaseTime/],
    [() => p.release('nope'), RangeError, /permitId/],
    [() => p.release(undefined), TypeError, /permitId/],
    [() => p.tryRelease(42), TypeError, /permitId/],
    [() => p.updateLeaseTime('00'.repeat(16), 0), RangeError, /leaseTime/],
    [() => p.addPermits(1e12), RangeError, /permits/],
    [() => s.trySetPermits(1, 0), RangeError, /ttl/],
    [() => s.trySetPermits(1, -5), RangeError, /ttl/],
    [() => s.trySetPermits(1, 1.5), RangeError, /ttl/],
    [() => s.trySetPermits(1, 'long'), TypeError, /ttl/],
    [() => s.trySetPermits(1, 10, 'ms'), TypeError, /unit/],
    [() => s.releaseIfExists(-1), RangeError, /permits/],
    [() => s.releaseIfExists('2'), TypeError, /permits/],
    [() => s.releaseIfExists(2 ** 31), RangeError, /permits/],
    [() => p.setPermits(-1), RangeError, /permits/],
    [() => p.setPermits(0.5), RangeError, /permits/],
    [() => p.setPermits(undefined), TypeError, /permits/],
    [() => p.getLeaseTime('nope'), RangeError, /permitId/],
    [() => p.getLeaseTime(null), TypeError, /permitId/],
    [() => l.trySetCount(-1), RangeError, /count/],
    [() => l.trySetCount(0.5), RangeError, /count/],
    [() => l.await(-1), RangeError, /waitTime/],
    [() => l.await(10, null), TypeError, /unit/]
  ]
  for (const [call, Cls, what] of cases) {
    await assert.rejects(call(), (err) => err instanceof Cls && what.test(err.message), String(call))
  }
  assert.throws(() => r.getSemaphore(''), TypeError)
  assert.throws(() => r.getPermitExpirableSemaphore(7), TypeError)
  assert.throws(() => r.getCountDownLatch(null), TypeError)
})

test('a closed instance rejects like an RLock', async () => {
  const r = make()
  const s = r.getSemaphore(fresh('closed'))
  const p = r.getPermitExpirableSemaphore(fresh('closed'))
  const l = r.getCountDownLatch(fresh('closed'))
  await r.quit()
  for (const call of [() => s.trySetPermits(1), () => s.tryAcquire(), () => s.acquire(0), () => s.release(0),
    () => p.tryAcquire(), () => p.availablePermits(), () => l.await(), () => l.countDown(),
    () => s.releaseIfExists(), () => s.releaseIfExists(0), () => s.trySetPermits(1, 100),
    () => p.getPermits(), () => p.acquiredPermits(), () => p.setPermits(1), () => p.getLeaseTime('00'.repeat(16))]) {
    await assert.rejects(call(), (err) => err instanceof RS.RedissonLockError && /closed by quit/.test(err.message))
  }
})

test('a key prefix is part of the name, and derived keys follow Java\'s rules', async () => {
  const name = fresh('prefixed')
  const r = make({ redis: { options: { host: '127.0.0.1', port: redis.server.port, keyPrefix: 'app:' } } })
  const p = r.getPermitExpirableSemaphore(name)
  await p.trySetPermits(2)
  const id = await p.acquire()
  assert.equal(await redis.check.get(`app:${name}`), '1')
  assert.equal(await redis.check.zcard(`{app:${name}}:timeout`), 1)
  await p.release(id)
  const braced = `{${name}}x`
  const q = r.getPermitExpirableSemaphore(braced)
  await q.trySetPermits(1)
  await q.acquire()
  assert.equal(await redis.check.zcard(`app:${braced}:timeout`), 1, 'a name with a brace: suffixName adds no braces')
})

test('layout: RSemaphore as Java Redisson writes and reads it', async () => {
  const name = fresh('java-sem')
  const channel = `redisson_sc:{${name}}`
  const ours = make().getSemaphore(name)
  const sub = await listen(channel)
  await redis.check.script('FLUSH')
  // Java's trySetPermits(5): our side sees 5.
  assert.equal(await java('TRY_SET_PERMITS', [name, channel], [5, 'publish']), 1)
  assert.equal(await redis.check.get(name), '5')
  assert.equal(await ours.availablePermits(), 5)
  // Ours takes 2: Java's tryAcquire(4) finds 3 and fails, tryAcquire(3) takes them.
  assert.equal(await ours.tryAcquire(2), true)
  assert.equal(await java('SEM_TRY_ACQUIRE', [name], [4]), 0)
  assert.equal(await java('SEM_TRY_ACQUIRE', [name], [3]), 1)
  assert.equal(await ours.tryAcquire(), false)
  // Our release publishes the new count, as Java's does.
  await ours.release(2)
  await ours.addPermits(1)
  await until('the messages', () => sub.messages.length >= 3)
  assert.deepEqual(sub.messages, ['5', '2', '3'])
  assert.equal(await redis.check.get(name), '3')
  // Java's drainPermits sees ours; Java's release wakes our waiter at once.
  assert.equal(Number(await java('SEM_DRAIN', [name], [])), 3, 'a string, as Java\'s LongCodec reads it')
  const t = Date.now()
  const waiting = ours.tryAcquire(2, 5000)
  await sleep(100)
  await java('SEM_RELEASE', [name, channel], [2, 'publish'])
  assert.equal(await waiting, true)
  assert.ok(Date.now() - t < 800)
  await java('SEM_ADD_PERMITS', [name, channel], [4, 'publish'])
  assert.equal(await ours.drainPermits(), 4)
  // Every script our side ran is Java's text (the same SHA-1).
  const used = ['TRY_SET_PERMITS', 'SEM_TRY_ACQUIRE', 'SEM_RELEASE', 'SEM_ADD_PERMITS', 'SEM_DRAIN']
  assert.deepEqual(await redis.check.script('EXISTS', ...used.map((k) => sha1(JAVA[k]))), used.map(() => 1))
  await ours.trySetPermits(1)
  await sub.close()
})

test('layout: RPermitExpirableSemaphore as Java Redisson writes and reads it', async () => {
  const name = fresh('java-pes')
  const channel = `redisson_sc:{${name}}`
  const timeout = `{${name}}:timeout`
  const ours = make().getPermitExpirableSemaphore(name)
  await redis.check.script('FLUSH')
  assert.equal(await java('TRY_SET_PERMITS', [name, channel], [3, 'publish']), 1)
  // Java's acquire of one permit with a 60 s lease: 16 raw bytes scored by the expiry.
  const javaId = crypto.randomBytes(16)
  const now = Date.now()
  const reply = await java('PES_TRY_ACQUIRE', [name, timeout, channel], [1, now + 60000, now, NON_EXPIRABLE, 'publish', javaId])
  assert.equal(reply, 'OK')
  assert.equal(await ours.availablePermits(), 2)
  // Ours takes one without a lease and one with: raw 16-byte members, Java's scores.
  const forever = await ours.acquire()
  const before = Date.now()
  const leased = await ours.acquire(30, TimeUnit.SECONDS)
  const members = await redis.check.zrangeBuffer(timeout, 0, -1, 'WITHSCORES')
  const scores = new Map()
  for (let i = 0; i < members.length; i += 2) scores.set(members[i].toString('hex'), Number(members[i + 1].toString()))
  for (const m of members.filter((_, i) => i % 2 === 0)) assert.equal(m.length, 16)
  assert.equal(scores.get(forever), Number(NON_EXPIRABLE))
  assert.ok(Math.abs(scores.get(leased) - (before + 30000)) < 1000, `score ${scores.get(leased)}`)
  assert.equal(await redis.check.get(name), '0')
  // No permits left: Java's acquire answers with the earliest expiry.
  const busy = await java('PES_TRY_ACQUIRE', [name, timeout, channel], [1, NON_EXPIRABLE, Date.now(), NON_EXPIRABLE, 'publish', crypto.randomBytes(16)])
  assert.equal(busy, `:${scores.get(leased)}`)
  // Java releases ours; ours releases Java's.
  assert.equal(await java('PES_TRY_RELEASE', [name, channel, timeout], [Buffer.from(leased, 'hex'), 1, Date.now(), 'publish']), 1)
  assert.equal(await ours.tryRelease(javaId.toString('hex')), true)
  assert.equal(await ours.tryRelease(leased), false)
  // Java's availablePermits and updateLeaseTime on ours.
  assert.equal(Number(await java('PES_AVAILABLE', [name, timeout, channel], [Date.now(), 'publish'])), 2)
  assert.equal(await java('PES_UPDATE_LEASE', [name, timeout, channel], [Buffer.from(forever, 'hex'), Date.now() + 200, Date.now(), 'publish']), 1)
  await sleep(250)
  // Ours counts Java's expired permit back.
  assert.equal(await ours.availablePermits(), 3)
  // A permit Java took with a short lease expires for our waiter.
  const shortId = crypto.randomBytes(16)
  await java('PES_ADD_PERMITS', [name, channel], [-2, 'publish'])
  assert.equal(await ours.availablePermits(), 1)
  await java('PES_TRY_ACQUIRE', [name, timeout, channel], [1, Date.now() + 300, Date.now(), NON_EXPIRABLE, 'publish', shortId])
  const t = Date.now()
  const got = await ours.tryAcquire(3000)
  assert.ok(got)
  assert.ok(Date.now() - t < 1200)
  assert.equal(await ours.updateLeaseTime(got, 5000), true)
  const used = ['TRY_SET_PERMITS', 'PES_TRY_ACQUIRE', 'PES_TRY_RELEASE', 'PES_AVAILABLE', 'PES_UPDATE_LEASE']
  assert.deepEqual(await redis.check.script('EXISTS', ...used.map((k) => sha1(JAVA[k]))), used.map(() => 1))
  await ours.addPermits(2)
  assert.deepEqual(await redis.check.script('EXISTS', sha1(JAVA.PES_ADD_PERMITS)), [1])
})

test('layout: RSemaphore\'s releaseIfExists and trySetPermits with a time to live, as Java\'s', async () => {
  const name = fresh('java-sem-more')
  const channel = `redisson_sc:{${name}}`
  const ours = make().getSemaphore(name)
  const sub = await listen(channel)
  await redis.check.script('FLUSH')
  // Java's releaseIfExists on no count: nothing; ours the same.
  assert.equal(await java('SEM_RELEASE_IF_EXISTS', [name, channel], [1, 'publish']), 0)
  assert.equal(await ours.releaseIfExists(), false)
  // Java's trySetPermits(2, 1 minute): ours sees the count and its TTL, and refuses to set it again.
  assert.equal(await java('TRY_SET_PERMITS_TTL', [name, channel], [2, 'publish', 60000]), 1)
  assert.equal(await ours.availablePermits(), 2)
  assert.equal(await ours.trySetPermits(5, 1000), false)
  assert.ok(await redis.check.pttl(name) > 55000)
  // Ours releases if it exists (publishing the new count), then Java's does.
  assert.equal(await ours.releaseIfExists(3), true)
  assert.equal(await java('SEM_RELEASE_IF_EXISTS', [name, channel], [1, 'publish']), 1)
  assert.equal(await redis.check.get(name), '6')
  // Ours sets with a TTL; Java's sees it set.
  await redis.check.del(name)
  assert.equal(await ours.trySetPermits(7, 30, TimeUnit.SECONDS), true)
  assert.equal(await java('TRY_SET_PERMITS_TTL', [name, channel], [1, 'publish', 1000]), 0)
  const pttl = await redis.check.pttl(name)
  assert.ok(pttl > 25000 && pttl <= 30000, `pttl ${pttl}`)
  await until('the messages', () => sub.messages.length >= 4)
  assert.deepEqual(sub.messages, ['2', '5', '6', '7'])
  const used = ['SEM_RELEASE_IF_EXISTS', 'TRY_SET_PERMITS_TTL']
  assert.deepEqual(await redis.check.script('EXISTS', ...used.map((k) => sha1(JAVA[k]))), used.map(() => 1))
  await sub.close()
})

test('layout: RPermitExpirableSemaphore\'s counts, setPermits and getLeaseTime, as Java\'s', async () => {
  const name = fresh('java-pes-more')
  const channel = `redisson_sc:{${name}}`
  const timeout = `{${name}}:timeout`
  const ours = make().getPermitExpirableSemaphore(name)
  await redis.check.script('FLUSH')
  assert.equal(await ours.trySetPermits(4), true)
  // Java takes one with a 60 s lease and one without; ours takes one with 30 s.
  const javaLeased = crypto.randomBytes(16)
  const javaForever = crypto.randomBytes(16)
  let now = Date.now()
  assert.equal(await java('PES_TRY_ACQUIRE', [name, timeout, channel], [1, now + 60000, now, NON_EXPIRABLE, 'publish', javaLeased]), 'OK')
  assert.equal(await java('PES_TRY_ACQUIRE', [name, timeout, channel], [1, NON_EXPIRABLE, now, NON_EXPIRABLE, 'publish', javaForever]), 'OK')
  const leased = await ours.acquire(30, TimeUnit.SECONDS)
  // The counts, either side.
  assert.equal(await ours.getPermits(), 4)
  assert.equal(await ours.acquiredPermits(), 3)
  now = Date.now()
  assert.equal(await java('PES_GET_PERMITS', [name, timeout, channel], [now, 'publish']), 4)
  assert.equal(await java('PES_ACQUIRED_PERMITS', [name, timeout, channel], [now, 'publish']), 3)
  // Lease times: ours reads Java's permits, Java's script reads ours.
  const left = await ours.getLeaseTime(javaLeased.toString('hex'))
  assert.ok(left > 55000 && left <= 60000, `left ${left}`)
  assert.equal(await ours.getLeaseTime(javaForever.toString('hex')), -1)
  now = Date.now()
  const javaLeft = await java('PES_GET_LEASE_TIME', [name, timeout, channel], [Buffer.from(leased, 'hex'), NON_EXPIRABLE, now, 'publish'])
  assert.ok(javaLeft > 25000 && javaLeft <= 30000, `java's ${javaLeft}`)
  assert.equal(await java('PES_GET_LEASE_TIME', [name, timeout, channel], [crypto.randomBytes(16), NON_EXPIRABLE, now, 'publish']), 0, 'Java\'s "doesn\'t exist"')
  // setPermits: ours to 6 (announcing 6), Java's to 2; each sees the other's.
  const sub = await listen(channel)
  await ours.setPermits(6)
  assert.equal(await redis.check.get(name), '3')
  await ours.setPermits(6)
  await java('PES_SET_PERMITS', [name, channel, timeout], [2, 'publish'])
  assert.equal(await ours.getPermits(), 2)
  assert.equal(await ours.availablePermits(), -1)
  await until('the messages', () => sub.messages.length >= 2)
  assert.deepEqual(sub.messages, ['6', '2'], 'no message when the total does not change')
  // An expired permit of Java's is swept by our counts, as by Java's.
  await java('PES_UPDATE_LEASE', [name, timeout, channel], [javaLeased, Date.now() + 100, Date.now(), 'publish'])
  await sleep(150)
  assert.equal(await ours.acquiredPermits(), 2)
  assert.equal(await redis.check.get(name), '0')
  await assert.rejects(ours.getLeaseTime(javaLeased.toString('hex')), RS.RedissonLockError)
  const used = ['PES_GET_PERMITS', 'PES_ACQUIRED_PERMITS', 'PES_SET_PERMITS', 'PES_GET_LEASE_TIME']
  assert.deepEqual(await redis.check.script('EXISTS', ...used.map((k) => sha1(JAVA[k]))), used.map(() => 1))
  await sub.close()
})

test('layout: RCountDownLatch as Java Redisson writes and reads it', async () => {
  const name = fresh('java-latch')
  const channel = `redisson_countdownlatch__channel__{${name}}`
  const ours = make().getCountDownLatch(name)
  const sub = await listen(channel)
  await redis.check.script('FLUSH')
  // Java's trySetCount(2) (publishes NEW_COUNT, 1).
  assert.equal(await java('LATCH_TRY_SET_COUNT', [name, channel], [1, 2, 'publish']), 1)
  assert.equal(await ours.getCount(), 2)
  assert.equal(await ours.trySetCount(3), false)
  // Ours counts down once, Java's once: ZERO_COUNT (0) published, key gone.
  const t = Date.now()
  const waiting = ours.await(5000)
  await sleep(50)
  await ours.countDown()
  await sleep(100)
  await java('LATCH_COUNT_DOWN', [name, channel], [0, 'publish'])
  assert.equal(await waiting, true)
  assert.ok(Date.now() - t < 800)
  assert.equal(await redis.check.exists(name), 0)
  // Ours sets a count: NEW_COUNT; Java counts down to zero.
  assert.equal(await ours.trySetCount(1), true)
  assert.equal(await redis.check.get(name), '1')
  await java('LATCH_COUNT_DOWN', [name, channel], [0, 'publish'])
  assert.equal(await ours.getCount(), 0)
  await ours.trySetCount(1)
  await ours.countDown()
  // trySetCount publishes NEW_COUNT (1), the count down to zero ZERO_COUNT (0).
  await until('the messages', () => sub.messages.length >= 6)
  assert.deepEqual(sub.messages, ['1', '0', '1', '0', '1', '0'])
  const used = ['LATCH_TRY_SET_COUNT', 'LATCH_COUNT_DOWN']
  assert.deepEqual(await redis.check.script('EXISTS', ...used.map((k) => sha1(JAVA[k]))), used.map(() => 1))
  await sub.close()
})

test('on Redis Cluster, a name whose keys would not share a slot is refused', async () => {
  // No connection is made until an operation runs.
  const r = new RS.Redisson({ redis: { clusters: [{ host: '127.0.0.1', port: 1 }] } })
  try {
    // The latch's channel is `…{name}` with literal braces: `{a}b` puts it in slot("{a").
    assert.throws(() => r.getCountDownLatch('{a}b'), (err) => err instanceof TypeError && /different slots/.test(err.message))
    r.getCountDownLatch('ab')
    // prefixName/suffixName keep a braced name's hash tag.
    r.getSemaphore('{a}b')
    r.getPermitExpirableSemaphore('x{a}b')
    r.getPermitExpirableSemaphore('plain')
  } finally {
    await r.quit()
  }
})

test('a change nobody announces still reaches a waiter within about a second (the safety net)', async () => {
  const name = fresh('unannounced')
  const r = make()
  const s = r.getSemaphore(name)
  await s.trySetPermits(0)
  let t = Date.now()
  const taking = s.tryAcquire(1, 5000)
  await sleep(100)
  // Written behind Redisson's back: no message on the channel.
  await redis.check.incrby(name, 1)
  assert.equal(await taking, true)
  let took = Date.now() - t
  assert.ok(took < 2000, `took ${took} ms`)
  const latch = r.getCountDownLatch(fresh('unannounced'))
  await latch.trySetCount(1)
  t = Date.now()
  const opening = latch.await(5000)
  await sleep(100)
  await redis.check.del(latch.name)
  assert.equal(await opening, true)
  took = Date.now() - t
  assert.ok(took < 2000, `took ${took} ms`)
})
