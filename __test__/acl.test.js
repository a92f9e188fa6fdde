'use strict'

/**
 * Redis 6+ ACL users: username + password from a URL, an options object and
 * the user's own clients (ioredis, node-redis v3/v4/v6), against a server
 * whose default user is switched off. And: credentials never show up in
 * error messages, causes, stacks or what a user would log.
 */

const { describe, test, before, after } = require('node:test')
const assert = require('node:assert')
const util = require('util')
const { execFile } = require('child_process')
const path = require('path')
const Redis = require('ioredis')
const { startRedis, freePort, withClient } = require('./helpers/redis')
const redislock = require('..')
const { LockAcquisitionError } = redislock

const PASSWORD = 'S3cr3t-p@ss:w/rd%'
const ENCODED = encodeURIComponent(PASSWORD)

/** Asserts `secret` appears nowhere a user could see or log from `err`. */
function assertNoSecret (err, secret) {
  const texts = [err.message, err.stack, util.inspect(err, { depth: 5 }), JSON.stringify(err), String(err)]
  if (err.cause) texts.push(err.cause.message, err.cause.stack, util.inspect(err.cause, { depth: 5 }), String(err.cause))
  for (const t of texts) {
    assert.ok(typeof t !== 'string' || !t.includes(secret), `secret leaked in: ${t}`)
    assert.ok(typeof t !== 'string' || !t.includes(encodeURIComponent(secret)), `encoded secret leaked in: ${t}`)
  }
}

describe('ACL users', () => {
  let srv, admin
  before(async () => {
    srv = await startRedis()
    await withClient({}, srv.port, async (setup) => {
      await setup.call('ACL', 'SETUSER', 'admin', 'on', '>adminpw', '~*', '+@all')
      await setup.call('ACL', 'SETUSER', 'alice', 'on', `>${PASSWORD}`, '~*', '+@all')
      await setup.call('ACL', 'SETUSER', 'bob', 'on', '>bobpw', '~lock:*', '+@all')
      await setup.call('ACL', 'SETUSER', 'default', 'off')
    })
    admin = new Redis({ port: srv.port, host: '127.0.0.1', username: 'admin', password: 'adminpw' })
    await admin.ping()
  })
  after(async () => {
    if (admin) admin.disconnect()
    if (srv) await srv.stop()
  })

  async function roundTrip (client, key) {
    const lock = redislock.createLock(client, { timeout: 10000 })
    await lock.acquire(key)
    assert.strictEqual(await admin.get(key), lock._id)
    await lock.extend(20000)
    await lock.release()
    assert.strictEqual(await admin.exists(key), 0)
  }

  async function refused (client, key = 'acl:refused') {
    const err = await redislock.createLock(client).acquire(key).then(() => null, (e) => e)
    assert.ok(err instanceof LockAcquisitionError, `expected LockAcquisitionError, got ${err && err.name}`)
    return err
  }

  test('username and password from a URL (percent-encoded)', async () => {
    await roundTrip(`redis://alice:${ENCODED}@127.0.0.1:${srv.port}`, 'acl:url')
    await roundTrip({ url: `redis://alice:${ENCODED}@127.0.0.1:${srv.port}/0` }, 'acl:url-obj')
  })

  test('username and password from an options object', async () => {
    await roundTrip({ host: '127.0.0.1', port: srv.port, username: 'alice', password: PASSWORD }, 'acl:opts')
  })

  test("from the user's ioredis and node-redis clients", async () => {
    await roundTrip(new Redis({ host: '127.0.0.1', port: srv.port, username: 'alice', password: PASSWORD, lazyConnect: true }), 'acl:ioredis')
    for (const name of ['redis4', 'redis']) {
      const { createClient } = require(name)
      await roundTrip(createClient({ socket: { host: '127.0.0.1', port: srv.port }, username: 'alice', password: PASSWORD }), `acl:${name}`)
      await roundTrip(createClient({ url: `redis://alice:${ENCODED}@127.0.0.1:${srv.port}` }), `acl:${name}:url`)
    }
    const redis3 = require('redis3')
    const v3 = redis3.createClient({ host: '127.0.0.1', port: srv.port, user: 'alice', password: PASSWORD })
    v3.on('error', () => {})
    try {
      await roundTrip(v3, 'acl:redis3')
    } finally {
      v3.quit()
    }
  })

  test('no or wrong credentials are refused; a user limited to lock:* keys can lock only those', async () => {
    const none = await refused({ host: '127.0.0.1', port: srv.port })
    assert.match(none.message, /NOAUTH|auth|disabled|WRONGPASS/i)
    const wrong = await refused({ host: '127.0.0.1', port: srv.port, username: 'alice', password: 'not-it-xyzzy' })
    assertNoSecret(wrong, 'not-it-xyzzy')
    await roundTrip({ host: '127.0.0.1', port: srv.port, username: 'bob', password: 'bobpw' }, 'lock:bob')
    const denied = await refused({ host: '127.0.0.1', port: srv.port, username: 'bob', password: 'bobpw' }, 'other:bob')
    assert.match(denied.message, /NOPERM|permission/i)
    assert.strictEqual(denied.cause.code, 'ERR_REDIS')
  })

  test('credentials never appear in errors: refused connection, failed AUTH, bad URL', async () => {
    const closed = await freePort()
    const secret = 'hunter2-do-not-print'
    const e1 = await refused(`redis://carol:${secret}@127.0.0.1:${closed}`)
    assertNoSecret(e1, secret)
    assertNoSecret(e1, 'carol:')
    const e2 = await refused({ url: `redis://alice:${secret}@127.0.0.1:${srv.port}` })
    assertNoSecret(e2, secret)
    const e3 = await refused({ host: '127.0.0.1', port: closed, username: 'carol', password: secret, connectTimeout: 300 })
    assertNoSecret(e3, secret)
    for (const bad of [`redis://carol:${secret}@127.0.0.1:99999999`, `redis://carol:${secret}@[::1`, { url: `redis://carol:${secret}@h:notaport` }]) {
      let thrown = null
      try {
        await redislock.createLock(bad).acquire('x')
      } catch (err) {
        thrown = err
      }
      assert.ok(thrown, 'a bad URL is refused')
      assertNoSecret(thrown, secret)
    }
  })

  test('credentials never appear in what a process logs about its failures', async () => {
    const closed = await freePort()
    const secret = 'swordfish-in-logs'
    const script = `
      const redislock = require(${JSON.stringify(path.join(__dirname, '..'))})
      const lock = redislock.createLock('redis://dave:${secret}@127.0.0.1:${closed}')
      lock.acquire('k', (err) => {
        console.error(err)
        console.log(err && err.stack, err && err.cause)
        redislock.createLock({ port: ${srv.port}, username: 'alice', password: '${secret}' })
          .acquire('k').catch((e) => { console.error(e); console.log(JSON.stringify(e)) })
      })`
    const { stdout, stderr } = await new Promise((resolve, reject) => {
      execFile(process.execPath, ['-e', script], { timeout: 20000, env: { ...process.env, RUST_LOG: 'trace', RUST_BACKTRACE: '1' } },
        (err, stdout, stderr) => err ? reject(err) : resolve({ stdout, stderr }))
    })
    assert.match(stderr, /LockAcquisitionError/)
    assert.ok(!stdout.includes(secret) && !stderr.includes(secret), 'the password was printed')
  })
})
