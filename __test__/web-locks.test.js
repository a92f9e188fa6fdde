'use strict'

/**
 * redislock-rs/web-locks: the W3C Web Locks API over Redis (issue 36), on a
 * real server, in one process (several managers, as several processes
 * would be) and across processes: FIFO order, shared and exclusive,
 * ifAvailable, steal, abort, the spec's argument errors, names that are
 * any string, query(), a holder killed with SIGKILL freed after its lease,
 * a deleted lock aborting lock.signal, prefixes apart, and a mixed-mode
 * stress run with no exclusive overlap and no starvation.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const { useRedis } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')
const { LockManager, Lock } = require('../web-locks')

const redis = useRedis()
let seq = 0
const fresh = (what) => `wl:${what}:${process.pid}:${++seq}`
const manager = (opts = {}) => new LockManager({ port: redis.server.port }, { lease: 3000, ...opts })

test('the module shape: LockManager and Lock, from require and import', async () => {
  const esm = await import('redislock-rs/web-locks')
  assert.equal(esm.LockManager, LockManager)
  assert.equal(esm.Lock, Lock)
  const p = manager().request(fresh('shape'), () => 7)
  assert.ok(p instanceof Promise, 'a native Promise')
  assert.equal(await p, 7)
})

test('exclusive requests are granted in the order they were made, across managers', async () => {
  const name = fresh('fifo')
  const managers = [manager(), manager(), manager()]
  const granted = []
  const ps = []
  for (let i = 0; i < 6; i++) {
    ps.push(managers[i % 3].request(name, async (lock) => {
      granted.push(i)
      assert.equal(lock.name, name)
      assert.equal(lock.mode, 'exclusive')
      await sleep(10)
      return i
    }))
    await sleep(5) // each request reaches Redis before the next is made
  }
  assert.deepEqual(await Promise.all(ps), [0, 1, 2, 3, 4, 5])
  assert.deepEqual(granted, [0, 1, 2, 3, 4, 5])
})

test('shared requests hold together; a shared request made after an exclusive one waits for it', async () => {
  const name = fresh('modes')
  const m = manager()
  const events = []
  let inside = 0
  let together = 0
  const shared = (tag) => m.request(name, { mode: 'shared' }, async (lock) => {
    assert.equal(lock.mode, 'shared')
    events.push(`${tag}+`)
    inside++
    together = Math.max(together, inside)
    await sleep(60)
    inside--
    events.push(`${tag}-`)
  })
  const s1 = shared('s1')
  const s2 = shared('s2')
  await sleep(20)
  const x = m.request(name, async () => { events.push('x+'); await sleep(20); events.push('x-') })
  await sleep(10)
  const s3 = shared('s3')
  await Promise.all([s1, s2, x, s3])
  assert.equal(together, 2, 's1 and s2 held at once')
  assert.deepEqual(events.slice(4), ['x+', 'x-', 's3+', 's3-'], events.join(' '))
})

test('ifAvailable: the callback gets null instead of waiting, and nothing is queued', async () => {
  const name = fresh('available')
  const a = manager()
  const b = manager()
  let release
  const held = a.request(name, () => new Promise((resolve) => { release = resolve }))
  await sleep(30)
  assert.equal(await b.request(name, { ifAvailable: true }, (lock) => lock), null)
  const snapshot = await b.query()
  assert.deepEqual(snapshot.pending.filter((p) => p.name === name), [])
  release('done')
  assert.equal(await held, 'done')
  assert.equal(await b.request(name, { ifAvailable: true }, (lock) => lock.name), name)
})

test('steal: granted at once, and the previous holder\'s request rejects with an AbortError and its signal aborts, before its callback ends', async () => {
  const name = fresh('steal')
  // Renewals every 10 s: the victim learns of the steal from its announcement.
  const a = manager({ lease: 30000 })
  const b = manager()
  let signal
  let callbackEnded = false
  const victim = a.request(name, async (lock) => {
    signal = lock.signal
    await sleep(3000)
    callbackEnded = true
    return 'finished'
  })
  await sleep(100)
  const stoleAt = Date.now()
  assert.equal(await b.request(name, { steal: true }, (lock) => lock.mode), 'exclusive')
  const err = await victim.then(() => assert.fail('the stolen request resolved'), (e) => e)
  assert.equal(callbackEnded, false, `told ${Date.now() - stoleAt} ms after the steal, while the callback still ran`)
  assert.ok(err instanceof DOMException, String(err))
  assert.equal(err.name, 'AbortError')
  assert.equal(signal.aborted, true)
  assert.equal(signal.reason, err)
})

test('an aborted signal takes a waiting request out of the queue and rejects with its reason', async () => {
  const name = fresh('abort')
  const a = manager({ clientId: 'holder' })
  const b = manager({ clientId: 'waiter' })
  let release
  const held = a.request(name, () => new Promise((resolve) => { release = resolve }))
  await sleep(30)
  const ac = new AbortController()
  let called = false
  const waiting = b.request(name, { signal: ac.signal }, () => { called = true })
  await sleep(50)
  assert.deepEqual((await a.query()).pending.filter((p) => p.name === name), [{ name, mode: 'exclusive', clientId: 'waiter' }])
  const reason = new Error('gave up')
  ac.abort(reason)
  assert.equal(await waiting.then(() => 'resolved', (e) => e), reason)
  const after = await a.query()
  assert.deepEqual(after.pending.filter((p) => p.name === name), [], 'no trace of it')
  assert.deepEqual(after.held.filter((p) => p.name === name), [{ name, mode: 'exclusive', clientId: 'holder' }])
  release()
  await held
  assert.equal(called, false)
  // Already aborted: rejected with the reason, nothing sent.
  assert.equal(await b.request(name, { signal: AbortSignal.abort('no') }, () => 1).catch((e) => e), 'no')
})

test('the spec\'s argument errors: NotSupportedError and TypeError, as rejections', async () => {
  const m = manager()
  const ns = async (p) => {
    const e = await p.then(() => assert.fail('resolved'), (err) => err)
    assert.ok(e instanceof DOMException, String(e))
    assert.equal(e.name, 'NotSupportedError')
  }
  await ns(m.request('-reserved', () => 1))
  await ns(m.request('x', { steal: true, ifAvailable: true }, () => 1))
  await ns(m.request('x', { steal: true, mode: 'shared' }, () => 1))
  await ns(m.request('x', { steal: true, signal: new AbortController().signal }, () => 1))
  await ns(m.request('x', { ifAvailable: true, signal: new AbortController().signal }, () => 1))
  await assert.rejects(m.request('x', { mode: 'readonly' }, () => 1), TypeError)
  await assert.rejects(m.request('x'), TypeError)
  await assert.rejects(m.request('x', {}, 'not a function'), TypeError)
  assert.throws(() => new LockManager({ port: redis.server.port }, { lease: 0 }), TypeError)
  assert.throws(() => new LockManager({ port: redis.server.port }, { clientId: '' }), TypeError)
})

test('any string is a name and comes back from query() unchanged; prefixes never meet', async () => {
  const names = ['\ud800lone', 'nul\0inside', '', 'é𝄞', `${fresh('plain')}`]
  const m = manager({ prefix: `p1:${process.pid}:` })
  const other = manager({ prefix: `p2:${process.pid}:` })
  let release
  const gate = new Promise((resolve) => { release = resolve })
  const held = names.map((n) => m.request(n, () => gate))
  await sleep(50)
  const seen = (await m.query()).held.map((h) => h.name)
  for (const n of names) assert.ok(seen.includes(n), `${JSON.stringify(n)} in ${JSON.stringify(seen)}`)
  // Another prefix: the same names are free there.
  for (const n of names) assert.equal(await other.request(n, { ifAvailable: true }, (l) => l !== null), true)
  assert.deepEqual((await other.query()).held, [])
  release()
  await Promise.all(held)
})

function child (code, env) {
  const proc = spawn(process.execPath, ['-e', code], {
    cwd: path.join(__dirname, '..'),
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  let out = ''
  proc.stdout.on('data', (d) => { out += d })
  proc.stderr.on('data', (d) => { out += d })
  const line = (text) => new Promise((resolve, reject) => {
    const check = () => { if (out.includes(text)) { resolve(); return true } return false }
    if (check()) return
    proc.stdout.on('data', check)
    proc.once('exit', (c, s) => { if (!check()) reject(new Error(`child exited ${c} ${s} before '${text}': ${out}`)) })
  })
  const exited = new Promise((resolve) => proc.once('exit', (c, s) => resolve({ code: c, signal: s, out })))
  return { proc, line, exited }
}

test('across processes: FIFO with another process, and a holder killed with SIGKILL frees the name after its lease', async () => {
  const name = fresh('procs')
  const holder = child(`
    const { LockManager } = require('./web-locks')
    const m = new LockManager({ port: ${redis.server.port} }, { lease: 1000 })
    m.request(${JSON.stringify(name)}, () => { console.log('held'); return new Promise(() => {}) })
  `)
  await holder.line('held')
  const m = manager()
  const started = Date.now()
  const waiting = m.request(name, () => Date.now())
  await sleep(300)
  holder.proc.kill('SIGKILL')
  await holder.exited
  const grantedAt = await waiting
  const waited = grantedAt - started
  assert.ok(waited >= 300, `granted only after the holder died (${waited} ms)`)
  assert.ok(waited < 8000, `freed after its lease (${waited} ms)`)
})

test('a holder whose lock is deleted under it: lock.signal aborts, and request() rejects with an AbortError', async () => {
  const name = fresh('deleted')
  const m = manager({ lease: 600 })
  let signal
  const p = m.request(name, async (lock) => {
    signal = lock.signal
    await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }))
    return 'saw it'
  })
  await sleep(50)
  const keys = await redis.check.keys('weblocks:*:h')
  assert.ok(keys.length >= 1, JSON.stringify(keys))
  await redis.check.del(...keys)
  const err = await p.then(() => assert.fail('resolved'), (e) => e)
  assert.equal(err.name, 'AbortError')
  assert.equal(signal.aborted, true)
})

test('mixed modes under load: never an exclusive holder beside another, and every request granted', async () => {
  const name = fresh('stress')
  const managers = Array.from({ length: 4 }, (_, i) => manager({ clientId: `m${i}` }))
  let exclusive = 0
  let shared = 0
  let violations = 0
  const done = []
  const one = (m, i) => {
    const mode = i % 3 === 0 ? 'exclusive' : 'shared'
    return m.request(name, { mode }, async () => {
      if (mode === 'exclusive') {
        exclusive++
        if (exclusive > 1 || shared > 0) violations++
      } else {
        shared++
        if (exclusive > 0) violations++
      }
      await sleep(1 + (i % 4))
      if (mode === 'exclusive') exclusive--
      else shared--
      done.push(i)
    })
  }
  const all = []
  for (let i = 0; i < 120; i++) all.push(one(managers[i % managers.length], i))
  await Promise.all(all)
  assert.equal(violations, 0)
  assert.equal(done.length, 120, 'no request starved')
  const left = await managers[0].query()
  assert.deepEqual([left.held, left.pending].map((l) => l.filter((x) => x.name === name).length), [0, 0])
})

test('requests on different names never wait for each other', async () => {
  const m = manager()
  const order = []
  await m.request(fresh('outer'), async () => {
    const blocked = fresh('b')
    let release
    const holder = m.request(blocked, () => new Promise((resolve) => { release = resolve }))
    await sleep(20)
    const waits = m.request(blocked, () => order.push('same name'))
    await m.request(fresh('other'), () => order.push('other name'))
    release()
    await Promise.all([holder, waits])
  })
  assert.deepEqual(order, ['other name', 'same name'])
})

test('across processes: requests from three processes are granted in the order they were queued, and one aborted while queued leaves no trace', async () => {
  const name = fresh('xproc')
  const m = manager({ clientId: 'parent' })
  let release
  const held = m.request(name, () => new Promise((resolve) => { release = resolve }))
  await sleep(30)
  // A member aborts its request when told on stdin (any line).
  const member = (clientId) => child(`
    const { LockManager } = require('./web-locks')
    const m = new LockManager({ port: ${redis.server.port} }, { lease: 3000, clientId: ${JSON.stringify(clientId)} })
    const ac = new AbortController()
    process.stdin.once('data', () => ac.abort())
    m.request(${JSON.stringify(name)}, { signal: ac.signal }, () => { console.log('granted ' + process.hrtime.bigint()) })
      .then(() => console.log('done'), (e) => console.log('rejected ' + e.name))
      .finally(() => process.stdin.destroy())
  `)
  const pendingIds = async () => (await m.query()).pending.filter((p) => p.name === name).map((p) => p.clientId)
  const until = async (want) => {
    for (let i = 0; i < 600; i++) {
      if (JSON.stringify(await pendingIds()) === JSON.stringify(want)) return
      await sleep(25)
    }
    assert.fail(`pending never became ${JSON.stringify(want)}: ${JSON.stringify(await pendingIds())}`)
  }
  const first = member('first')
  await until(['first'])
  const quitter = member('quitter')
  await until(['first', 'quitter'])
  const last = member('last')
  await until(['first', 'quitter', 'last'])
  quitter.proc.stdin.write('abort\n')
  await quitter.line('rejected AbortError')
  await until(['first', 'last'])
  release()
  await held
  const [a, b] = await Promise.all([first.exited, last.exited])
  const at = (r) => BigInt(/granted (\d+)/.exec(r.out)[1])
  assert.ok(at(a) < at(b), `first before last:\n${a.out}\n${b.out}`)
  assert.deepEqual(await pendingIds(), [])
})
