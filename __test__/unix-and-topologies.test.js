'use strict'

/**
 * Unix sockets in every form the clients accept (options `path`, `unix://`
 * and `redis+unix://` URLs with db and password, node_redis v3/v4+/ioredis
 * clients on a path), and the client shapes we cannot read exactly
 * (Sentinel, Cluster, a custom ioredis Connector), which must be refused
 * with a TypeError rather than taken as the default 127.0.0.1:6379.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('fs')
const os = require('os')
const path = require('path')
const IORedis = require('ioredis')
const redis3 = require('redis3')
const redis4 = require('redis4')
const redisLatest = require('redis')
const { startRedis } = require('./helpers/redis')
const { createLock, LockAcquisitionError } = require('..')

const PASSWORD = 'unix-pw'
let dir
let socket
let server
let check

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-unix-'))
  socket = path.join(dir, 'redis.sock')
  server = await startRedis({ args: ['--unixsocket', socket, '--unixsocketperm', '700', '--requirepass', PASSWORD] })
  check = new IORedis({ path: socket, password: PASSWORD, db: 3 })
})

after(async () => {
  await check.quit()
  await server.stop()
  fs.rmSync(dir, { recursive: true, force: true })
})

/** Locks `key` through `client`, checks it is in db 3 over the socket, releases. */
async function locksOverSocket (client, key) {
  const lock = createLock(client, { timeout: 5000 })
  await lock.acquire(key)
  try {
    assert.equal(await check.get(key), lock._id)
    const ttl = await check.pttl(key)
    assert.ok(ttl > 4000 && ttl <= 5000, `ttl ${ttl}`)
  } finally {
    await lock.release()
  }
  assert.equal(await check.exists(key), 0)
}

test('options object with path, db and password', async () => {
  await locksOverSocket({ path: socket, db: 3, password: PASSWORD }, 'unix:opts')
})

test('unix:// and redis+unix:// URLs with db, password and timeouts', async () => {
  await locksOverSocket(`unix://${socket}?db=3&pass=${PASSWORD}`, 'unix:url')
  await locksOverSocket(`redis+unix://${socket}?db=3&pass=${PASSWORD}&commandTimeout=500`, 'unix:url+')
  await locksOverSocket({ url: `unix://${socket}?db=3`, password: PASSWORD, connectTimeout: 800 }, 'unix:url-opts')
})

test('node_redis v3, v4, latest and ioredis clients on a path lock over that socket', async () => {
  const v3 = redis3.createClient({ path: socket, password: PASSWORD, db: 3 })
  await new Promise((resolve, reject) => { v3.once('ready', resolve); v3.once('error', reject) })
  const v4 = redis4.createClient({ socket: { path: socket }, password: PASSWORD, database: 3 })
  await v4.connect()
  const latest = redisLatest.createClient({ socket: { path: socket }, password: PASSWORD, database: 3 })
  await latest.connect()
  // ioredis keeps its default host and port beside the path: the path wins.
  const io = new IORedis({ path: socket, password: PASSWORD, db: 3 })
  try {
    await locksOverSocket(v3, 'unix:v3')
    await locksOverSocket(v4, 'unix:v4')
    await locksOverSocket(latest, 'unix:latest')
    await locksOverSocket(io, 'unix:ioredis')
  } finally {
    await new Promise((resolve) => v3.quit(() => resolve()))
    await v4.quit()
    await latest.quit()
    await io.quit()
  }
})

test('a wrong password or a missing socket is a LockAcquisitionError', async () => {
  const wrong = createLock({ path: socket, password: 'nope-nope' })
  const err = await wrong.acquire('unix:wrong').catch((e) => e)
  assert.ok(err instanceof LockAcquisitionError, String(err))
  assert.doesNotMatch(`${err.message} ${err.cause && err.cause.message}`, /nope-nope/)
  const missing = createLock({ path: path.join(dir, 'absent.sock'), connectTimeout: 500 })
  const err2 = await missing.acquire('unix:missing').catch((e) => e)
  assert.ok(err2 instanceof LockAcquisitionError, String(err2))
})

test('contradictory Unix socket settings are a TypeError', () => {
  for (const bad of [
    { path: socket, host: '127.0.0.1' },
    { path: socket, port: 6379 },
    { url: `unix://${socket}`, port: 6379 },
    { path: socket, tls: true },
    { path: '' }
  ]) {
    assert.throws(() => createLock(bad), TypeError, JSON.stringify(bad))
  }
})

test('custom-connector clients and unconnected node-redis Sentinel clients are refused with a TypeError that says so; Cluster and ioredis Sentinel settings are read', async () => {
  const refused = (client, pattern) => {
    assert.throws(() => createLock(client), (err) => {
      assert.ok(err instanceof TypeError, String(err))
      assert.match(err.message, pattern)
      assert.match(err.message, /does not support yet/)
      return true
    })
  }
  // Sentinel (sentinel.test.js fails over a real one): ioredis settings are
  // read; a node-redis Sentinel client only once connected (its nodes are
  // public then), and says so.
  const sentinel = new IORedis({ sentinels: [{ host: '127.0.0.1', port: 1 }], name: 'mymaster', lazyConnect: true })
  assert.doesNotThrow(() => createLock(sentinel))
  assert.doesNotThrow(() => createLock({ sentinels: [{ host: '127.0.0.1', port: 26379 }], name: 'mymaster', db: 1, username: 'u', password: 'p' }))
  assert.throws(() => createLock(redisLatest.createSentinel({ name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }] })),
    (err) => err instanceof TypeError && /node-redis Sentinel client that has not connected yet \(call connect\(\) first/.test(err.message))
  refused({ sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }], name: 'mymaster' }, /give \{ sentinels: \[host:port, \.\.\.\], name \}/)
  assert.throws(() => createLock({ sentinels: [{ host: '127.0.0.1', port: 1 }] }), /name/)
  // Redis Cluster (cluster.test.js locks on a real one): an ioredis
  // Cluster and { cluster: [...] } are read; a node-redis cluster client
  // keeps its nodes private until connect(), and says so.
  const cluster = new IORedis.Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true })
  assert.doesNotThrow(() => createLock(cluster))
  assert.doesNotThrow(() => createLock({ cluster: ['127.0.0.1:1', 'redis://127.0.0.1:2'] }))
  for (const lib of [redisLatest, redis4]) {
    assert.throws(() => createLock(lib.createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] })),
      (err) => err instanceof TypeError && /node-redis cluster client \(call connect\(\) first\)/.test(err.message))
  }
  refused({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }, /rootNodes: give \{ cluster: \[url, \.\.\.\] \}/)
  assert.throws(() => createLock({ cluster: [] }), TypeError)
  assert.throws(() => createLock({ cluster: ['nohostport'] }), TypeError)
  assert.throws(() => createLock({ cluster: ['127.0.0.1:1'], db: 3 }), TypeError)
  refused({ socket: { host: '127.0.0.1', port: server.port } }, /socket options/)
  class MyConnector { constructor () { this.connecting = false } connect () {} disconnect () {} }
  refused(new IORedis({ Connector: MyConnector, lazyConnect: true }), /Connector/)
  sentinel.disconnect()
  cluster.disconnect()
})
