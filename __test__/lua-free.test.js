'use strict'

/**
 * Locks without Lua where the server can (src/transport/dialect.rs): on a
 * real valkey-server 9 (installed by scripts/valkey.js when the machine
 * has none) the token lock releases with DELIFEQ, extends with SET … IFEQ
 * and is renewed by the keeper with SET … IFEQ … GET; on redis-server 7 it
 * keeps redislock's scripts. The same data either way: a Lua-free holder,
 * a scripted one (ours with REDISLOCK_RS_LUA_FREE=0, and redislock 1.3.0
 * itself) exclude each other on one Valkey. A user without @scripting can
 * lock on Valkey 9, and on Redis 7 is told by its first acquire what it
 * lacks. A server restarted under the library as an older one (no
 * DELIFEQ) is spoken to with scripts again.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const IORedis = require('ioredis')
const { startRedis, freePort } = require('./helpers/redis')
const { startMonitor } = require('./helpers/monitor')
const { runNode } = require('./helpers/child')
const { sleep } = require('./helpers/wait')
const valkey = require('../scripts/valkey')
const redislock = require('..')

let vk, rd
before(async () => {
  const bin = valkey.find()
  assert.ok(bin, 'a valkey-server 9 is needed (scripts/valkey.js)')
  vk = await startRedis({ bin })
  rd = await startRedis({ bin: 'redis-server' })
})
after(async () => {
  if (vk) await vk.stop()
  if (rd) await rd.stop()
})

let seq = 0
const fresh = (what) => `luafree:${what}:${process.pid}:${++seq}`
const SCRIPTED = new Set(['EVAL', 'EVALSHA', 'EVAL_RO', 'EVALSHA_RO', 'FCALL', 'SCRIPT'])

/** The commands (upper-cased verbs with their arguments) `fn` sent to `server` for keys containing `mark`. */
async function traffic (server, mark, fn) {
  const mon = await startMonitor(server.port)
  try {
    await fn()
    await sleep(100)
    return mon.seen.filter((args) => args.some((a) => a.includes(mark))).map((a) => [a[0].toUpperCase(), ...a.slice(1)])
  } finally {
    mon.close()
  }
}

test('on Valkey 9 the redislock face locks, extends, renews and releases without a script', async () => {
  const key = fresh('verbs')
  const seen = await traffic(vk, key, async () => {
    const lock = redislock.createLock({ port: vk.port }, { timeout: 3000 })
    await lock.acquire(key)
    await lock.extend(6000)
    await lock.release()
    const kept = redislock.createLock({ port: vk.port }, { timeout: 600, autoExtend: true, wakeOnRelease: true })
    await kept.acquire(key)
    await sleep(700) // past one lease: only the keeper's renewals hold it
    assert.equal(kept.signal.aborted, false)
    await kept.release()
  })
  const verbs = seen.map((a) => a[0])
  assert.deepEqual(verbs.filter((v) => SCRIPTED.has(v)), [], JSON.stringify(seen))
  const token = (i) => seen[i][2]
  assert.deepEqual(seen.slice(0, 3).map((a) => a.join(' ')), [
    `SET ${key} ${token(0)} PX 3000 NX`,
    `SET ${key} ${token(0)} IFEQ ${token(0)} PX 6000`,
    `DELIFEQ ${key} ${token(0)}`
  ])
  const renewals = seen.filter((a) => a[0] === 'SET' && a.includes('GET'))
  assert.ok(renewals.length >= 1, JSON.stringify(seen))
  assert.deepEqual(renewals[0].slice(3), ['IFEQ', renewals[0][2], 'PX', '600', 'GET'])
  assert.deepEqual(verbs.slice(-2), ['DELIFEQ', 'PUBLISH'], 'an announced release: the delete, then its announcement')
})

test('on Redis 7 the same calls keep redislock\'s scripts', async () => {
  const key = fresh('scripts')
  const seen = await traffic(rd, key, async () => {
    const lock = redislock.createLock({ port: rd.port }, { timeout: 3000 })
    await lock.acquire(key)
    await lock.extend(6000)
    await lock.release()
  })
  const verbs = seen.map((a) => a[0])
  assert.ok(!verbs.includes('DELIFEQ') && !verbs.some((v, i) => v === 'SET' && seen[i].includes('IFEQ')), JSON.stringify(seen))
  assert.equal(verbs.filter((v) => v === 'EVALSHA' || v === 'EVAL').length >= 2, true, JSON.stringify(seen))
})

test('what the Lua-free path answers is what the scripts answer: not ours, expired, taken', async () => {
  for (const server of [vk, rd]) {
    const check = new IORedis({ port: server.port })
    try {
      const key = fresh('answers')
      const lock = redislock.createLock({ port: server.port }, { timeout: 2000, retries: 0 })
      await lock.acquire(key)
      await check.set(key, 'someone-else', 'PX', 2000)
      await assert.rejects(lock.extend(3000), (e) => e instanceof redislock.LockExtendError && /had expired/.test(e.message))
      assert.equal(await check.get(key), 'someone-else', 'an extend of a lock not ours changes nothing')
      await assert.rejects(lock.release(), redislock.LockReleaseError)
      assert.equal(await check.get(key), 'someone-else', 'a release of a lock not ours deletes nothing')
      await check.del(key)

      const kept = redislock.createLock({ port: server.port }, { timeout: 400, autoExtend: true })
      await kept.acquire(key)
      await check.set(key, 'thief', 'PX', 5000)
      await new Promise((resolve) => kept.signal.addEventListener('abort', resolve, { once: true }))
      assert.equal(kept.signal.reason.reason, 'taken', `${server === vk ? 'valkey' : 'redis'}: the renewal says why`)
      await check.del(key)
      const gone = redislock.createLock({ port: server.port }, { timeout: 400, autoExtend: true })
      await gone.acquire(key)
      await check.del(key)
      await new Promise((resolve) => gone.signal.addEventListener('abort', resolve, { once: true }))
      assert.equal(gone.signal.reason.reason, 'expired')
    } finally {
      check.disconnect()
    }
  }
})

test('a fleet on one Valkey excludes itself: ours without Lua, ours with scripts, and redislock 1.3.0', async () => {
  const key = fresh('fleet')
  const counter = `${key}:in`
  const fixture = `
    const kind = process.argv[1], port = Number(process.argv[2]), key = process.argv[3], counter = process.argv[4]
    const IORedis = require('ioredis')
    const check = new IORedis({ port })
    const lib = kind === 'theirs' ? require('redislock') : require(${JSON.stringify(require.resolve('..'))})
    const client = kind === 'theirs' ? new IORedis({ port }) : { port }
    ;(async () => {
      let overlaps = 0
      for (let i = 0; i < 40; i++) {
        const lock = lib.createLock(client, { timeout: 5000, retries: 1000, delay: 2 })
        await lock.acquire(key)
        if (await check.incr(counter) !== 1) overlaps++
        await new Promise((r) => setTimeout(r, 1))
        await check.decr(counter)
        await lock.release()
      }
      console.log(JSON.stringify({ overlaps }))
      check.disconnect()
      if (kind === 'theirs') client.disconnect()
    })().catch((e) => { console.error(e); process.exit(1) })`
  const members = [['lua-free', {}], ['lua-free', {}], ['scripted', { REDISLOCK_RS_LUA_FREE: '0' }], ['theirs', {}]]
  const mon = await startMonitor(vk.port)
  let runs
  try {
    runs = await Promise.all(members.map(([kind, env]) => runNode(['-e', fixture, kind, String(vk.port), key, counter],
      { boundMs: 60000, env: { ...process.env, ...env } })))
  } finally {
    mon.close()
  }
  for (const [i, r] of runs.entries()) {
    assert.equal(r.code, 0, `${members[i][0]}: ${r.signal} ${r.stderr}`)
    assert.deepEqual(JSON.parse(r.stdout.trim().split('\n').pop()), { overlaps: 0 }, members[i][0])
  }
  const verbs = new Set(mon.seen.filter((a) => a.includes(key)).map((a) => a[0].toUpperCase()))
  assert.ok(verbs.has('DELIFEQ'), 'the Lua-free members released with DELIFEQ')
  assert.ok(verbs.has('EVALSHA') || verbs.has('EVAL'), 'the scripted members released with scripts')
})

/**
 * Runs `members` at once on the Valkey, each 30 times taking its lock,
 * calling `section()` inside it (a round trip) and giving it back: how
 * often two were inside together.
 */
async function overlaps (members) {
  const check = new IORedis({ port: vk.port })
  let inside = 0
  let seen = 0
  const section = async () => {
    if (++inside !== 1) seen++
    await check.ping()
    inside--
  }
  try {
    await Promise.all(members.map(async (cycle) => {
      for (let i = 0; i < 30; i++) await cycle(section)
    }))
    return seen
  } finally {
    check.disconnect()
  }
}

/** Whether `key` exists on the Valkey (0 or 1). */
async function exists (key) {
  const check = new IORedis({ port: vk.port })
  try {
    return await check.exists(key)
  } finally {
    check.disconnect()
  }
}

async function scriptless (server) {
  const admin = new IORedis({ port: server.port })
  await admin.call('ACL', 'SETUSER', 'noscript', 'on', '>pw', '~*', '&*', '+@all', '-@scripting')
  admin.disconnect()
  return { port: server.port, username: 'noscript', password: 'pw' }
}

test('a user without @scripting locks, extends and releases on Valkey 9', async () => {
  const opts = await scriptless(vk)
  const key = fresh('acl')
  const lock = redislock.createLock(opts, { timeout: 2000 })
  await lock.acquire(key)
  await lock.extend(4000)
  await lock.release()
  const kept = redislock.createLock(opts, { timeout: 400, autoExtend: true })
  await kept.acquire(key)
  await sleep(600)
  assert.equal(kept.signal.aborted, false, 'renewed without a script')
  await kept.release()
})

test('a user without @scripting on Redis 7 is told by the first acquire what it lacks, and nothing is left locked', async () => {
  const opts = await scriptless(rd)
  const key = fresh('acl7')
  const check = new IORedis({ port: rd.port })
  try {
    const lock = redislock.createLock(opts, { timeout: 2000 })
    const err = await lock.acquire(key).then(() => assert.fail('acquired'), (e) => e)
    assert.ok(err instanceof redislock.LockAcquisitionError, String(err))
    assert.match(err.message, /may not run scripts/)
    assert.match(err.message, /\+@scripting/)
    assert.match(err.message, /Valkey 9\.0/)
    assert.ok(!/^NOPERM/.test(err.message), err.message)
    assert.equal(await check.exists(key), 0, 'no key was set')
    assert.equal(lock._locked, false)
  } finally {
    check.disconnect()
  }
})

test('a Valkey restarted as an older server (no DELIFEQ) under the library is spoken to with scripts again', async () => {
  const port = await freePort()
  const bin = valkey.find()
  let server = await startRedis({ bin, port })
  const client = { port }
  try {
    const first = redislock.createLock(client, { timeout: 5000 })
    await first.acquire(fresh('before'))
    await first.release() // learned: DELIFEQ
    await server.stop()
    server = await startRedis({ bin: 'redis-server', port })
    const key = fresh('after')
    const lock = redislock.createLock(client, { timeout: 5000, retries: 20, delay: 100 })
    await lock.acquire(key)
    await lock.extend(6000)
    await lock.release()
    const check = new IORedis({ port })
    assert.equal(await check.exists(key), 0)
    check.disconnect()
  } finally {
    await server.stop()
  }
})

test('on Valkey 9 redis-semaphore\'s Mutex refreshes and releases without a script; its Semaphore keeps its scripts', async () => {
  const S = require('../semaphore')
  const key = fresh('mutex')
  const client = new IORedis({ port: vk.port })
  try {
    const seen = await traffic(vk, key, async () => {
      const m = new S.Mutex(client, key, { lockTimeout: 900, refreshInterval: 300 })
      await m.acquire()
      await sleep(1100) // past its lease: only the refreshes hold it
      assert.equal(m.isAcquired, true)
      assert.equal(m.signal.aborted, false)
      await m.release()
      const w = new S.Mutex(client, key, { lockTimeout: 900, refreshInterval: 0, wakeOnRelease: true })
      await w.acquire()
      await w.release()
    })
    const verbs = seen.map((a) => a[0])
    assert.deepEqual(verbs.filter((v) => SCRIPTED.has(v)), [], JSON.stringify(seen))
    const id = seen[0][2]
    assert.deepEqual(seen[0], ['SET', `mutex:${key}`, id, 'PX', '900', 'NX'])
    assert.ok(seen.some((a) => a[0] === 'SET' && a[3] === 'IFEQ' && a[4] === id && a[6] === '900'), `a refresh by SET IFEQ: ${JSON.stringify(seen)}`)
    assert.ok(seen.some((a) => a[0] === 'DELIFEQ' && a[2] === id), JSON.stringify(seen))
    assert.deepEqual(verbs.slice(-2), ['DELIFEQ', 'PUBLISH'])

    const sem = fresh('semaphore')
    const scripted = await traffic(vk, sem, async () => {
      const s = new S.Semaphore(client, sem, 2, { refreshInterval: 0 })
      await s.acquire()
      await s.release()
    })
    assert.ok(scripted.some((a) => a[0] === 'EVALSHA' || a[0] === 'EVAL'), JSON.stringify(scripted))
  } finally {
    client.disconnect()
  }
})

test('ours without Lua and redis-semaphore 5.8.0 share a Mutex on one Valkey and exclude each other', async () => {
  const S = require('../semaphore')
  const Theirs = require('redis-semaphore')
  const key = fresh('mutex-fleet')
  const client = new IORedis({ port: vk.port })
  const member = (lib) => async (section) => {
    const m = new lib.Mutex(client, key, { lockTimeout: 5000, acquireTimeout: 20000, retryInterval: 2, refreshInterval: 0 })
    await m.acquire()
    await section()
    await m.release()
  }
  try {
    assert.equal(await overlaps([member(S), member(S), member(Theirs), member(Theirs)]), 0)
    assert.equal(await exists(`mutex:${key}`), 0, 'every member gave the lock back')
  } finally {
    client.disconnect()
  }
})

test('without @scripting: redis-semaphore\'s Mutex works on Valkey 9; what needs scripts says so, in the face\'s class', async () => {
  const S = require('../semaphore')
  const vopts = await scriptless(vk)
  const onValkey = new IORedis(vopts)
  const ropts = await scriptless(rd)
  const onRedis = new IORedis(ropts)
  const check = new IORedis({ port: rd.port })
  try {
    const m = new S.Mutex(onValkey, fresh('acl-mutex'), { lockTimeout: 2000, refreshInterval: 0 })
    await m.acquire()
    await m.release()

    const sem = new S.Semaphore(onValkey, fresh('acl-sem'), 2, { refreshInterval: 0, acquireTimeout: 1000 })
    const semErr = await sem.acquire().then(() => assert.fail('acquired'), (e) => e)
    assert.match(semErr.message, /may not run scripts/)
    assert.match(semErr.message, /\+@scripting/)

    const key = fresh('acl-mutex7')
    const m7 = new S.Mutex(onRedis, key, { lockTimeout: 2000, refreshInterval: 0, acquireTimeout: 1000 })
    const err7 = await m7.acquire().then(() => assert.fail('acquired'), (e) => e)
    assert.match(err7.message, /may not run scripts/)
    assert.match(err7.message, /Valkey 9\.0/)
    assert.equal(await check.exists(`mutex:${key}`), 0, 'no key was set')
  } finally {
    onValkey.disconnect()
    onRedis.disconnect()
    check.disconnect()
  }
})

test('on Valkey 9 the redlock faces lock one resource without a script; several resources and transformed scripts keep theirs', async () => {
  const Redlock4 = require('../redlock')
  const { default: Redlock5 } = require('../redlock-v5')
  const client = new IORedis({ port: vk.port })
  try {
    const one = fresh('redlock-one')
    const seen = await traffic(vk, one, async () => {
      const r4 = new Redlock4([client], { retryCount: 0 })
      const lock = await r4.lock(one, 2000)
      await lock.extend(4000)
      await lock.unlock()
      const r5 = new Redlock5([client], { retryCount: 0 })
      const l5 = await r5.acquire([one], 2000)
      await l5.extend(4000)
      await l5.release()
    })
    assert.deepEqual(seen.filter((a) => SCRIPTED.has(a[0])), [], JSON.stringify(seen))
    const shapes = seen.map((a) => a[0] === 'SET' ? `SET ${a.slice(3).filter((x) => !/^[0-9a-f]{32}$/.test(x)).join(' ')}` : a[0])
    assert.deepEqual(shapes, ['SET PX 2000 NX', 'SET IFEQ PX 4000', 'DELIFEQ', 'SET PX 2000 NX', 'SET IFEQ PX 4000', 'DELIFEQ'])

    const two = [fresh('redlock-a'), fresh('redlock-b')].map((k) => `{${one}}${k}`)
    const several = await traffic(vk, one, async () => {
      const lock = await new Redlock4([client], { retryCount: 0 }).lock(two, 2000)
      await lock.unlock()
    })
    assert.deepEqual(several.map((a) => a[0]).filter((v) => v === 'EVALSHA' || v === 'EVAL').length >= 2, true, JSON.stringify(several))

    const custom = fresh('redlock-custom')
    const transformed = await traffic(vk, custom, async () => {
      const r = new Redlock4([client], { retryCount: 0, unlockScript: (s) => `${s}\n-- ours` })
      const lock = await r.lock(custom, 2000)
      await lock.unlock()
    })
    assert.ok(transformed.some((a) => a[0] === 'EVALSHA' || a[0] === 'EVAL'), JSON.stringify(transformed))
    assert.ok(!transformed.some((a) => a[0] === 'DELIFEQ'), 'a transformed set runs as given')
  } finally {
    client.disconnect()
  }
})

test('ours without Lua and redlock 4.2.0 share a resource on one Valkey and exclude each other', async () => {
  const key = fresh('redlock-fleet')
  const client = new IORedis({ port: vk.port })
  const member = (Redlock) => {
    const redlock = new Redlock([client], { retryCount: 2000, retryDelay: 2, retryJitter: 1 })
    return async (section) => {
      const lock = await redlock.lock(key, 5000)
      await section()
      await lock.unlock()
    }
  }
  try {
    const [Ours, Theirs] = [require('../redlock'), require('redlock')]
    assert.equal(await overlaps([member(Ours), member(Ours), member(Theirs), member(Theirs)]), 0)
    assert.equal(await exists(key), 0)
  } finally {
    client.disconnect()
  }
})

test('without @scripting the redlock faces lock, extend and unlock one resource on Valkey 9', async () => {
  const Redlock4 = require('../redlock')
  const { default: Redlock5 } = require('../redlock-v5')
  const client = new IORedis(await scriptless(vk))
  const check = new IORedis({ port: vk.port })
  try {
    const key = fresh('acl-redlock')
    const lock = await new Redlock4([client], { retryCount: 0 }).lock(key, 2000)
    await lock.extend(3000)
    assert.ok(await check.pttl(key) > 2000)
    await lock.unlock()
    const l5 = await new Redlock5([client], { retryCount: 0 }).acquire([key], 2000)
    await l5.release()
    assert.equal(await check.exists(key), 0)
  } finally {
    client.disconnect()
    check.disconnect()
  }
})
