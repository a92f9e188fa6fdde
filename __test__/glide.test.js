'use strict'

/**
 * Valkey's clients: a Valkey GLIDE `GlideClient` (database, credentials,
 * timeouts read off its config) and `GlideClusterClient` (its seeds) are
 * accepted like every other client, against real servers; what cannot be
 * read exactly is refused with a message that names GLIDE; and iovalkey
 * (ioredis-shaped) works as ioredis does, database and key prefix included.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { GlideClient, GlideClusterClient } = require('@valkey/valkey-glide')
const Valkey = require('iovalkey')
const IORedis = require('ioredis')
const R = require('..')
const S = require('../semaphore')
const { startRedis } = require('./helpers/redis')
const { startCluster } = require('./helpers/cluster')

let server
let check
let seq = 0
const fresh = (what) => `glide:${what}:${process.pid}:${seq++}`

before(async () => {
  server = await startRedis({ args: ['--requirepass', 'glide-secret'] })
  check = new IORedis({ port: server.port, password: 'glide-secret' })
})

after(async () => {
  check.disconnect()
  await server.stop()
})

test('a GlideClient: its server, database, password and timeouts are read; the lock lands where GLIDE points', async () => {
  const glide = await GlideClient.createClient({
    addresses: [{ host: '127.0.0.1', port: server.port }],
    databaseId: 2,
    credentials: { password: 'glide-secret' },
    requestTimeout: 1500
  })
  try {
    const key = fresh('lock')
    const lock = R.createLock(glide, { timeout: 5000 })
    await lock.acquire(key)
    await check.select(2)
    assert.equal(await check.get(key), lock._id, 'in database 2, with the password')
    await lock.release()
    assert.equal(await check.exists(key), 0)
    const m = new S.Semaphore(glide, key, 2)
    await m.acquire()
    assert.equal(await check.zscore(`semaphore:${key}`, m.identifier) !== null, true)
    await m.release()
    await check.select(0)
  } finally {
    glide.close()
  }
})

test('what cannot be read exactly is refused, naming GLIDE and what to pass instead', () => {
  const shaped = (Class, config) => Object.assign(Object.create(Class.prototype), { config })
  for (const [client, why] of [
    [shaped(GlideClient, { addresses: [{ host: 'a' }, { host: 'b' }] }), /2 addresses/],
    [shaped(GlideClient, { addresses: [{ host: 'a' }], credentials: { username: 'u', iamConfig: { clusterName: 'c' } } }), /IAM/],
    [shaped(GlideClient, {}), /config\.addresses/],
    [shaped(GlideClusterClient, { addresses: [{ host: 'a', port: 1 }], databaseId: 3 }), /database other than 0/]
  ]) {
    assert.throws(() => R.createLock(client), (err) => {
      assert.ok(err instanceof TypeError)
      assert.match(err.message, /Valkey GLIDE/)
      assert.match(err.message, why)
      assert.match(err.message, /pass a redis:\/\//)
      return true
    })
  }
})

test('a GlideClusterClient: its seeds make a cluster endpoint; the lock is on the cluster', async () => {
  const cluster = await startCluster({ masters: 3 })
  let glide
  try {
    glide = await GlideClusterClient.createClient({
      addresses: cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })),
      requestTimeout: 2000
    })
    const key = fresh('cluster')
    const lock = R.createLock(glide, { timeout: 5000 })
    await lock.acquire(key)
    assert.equal(String(await glide.get(key)), lock._id)
    await lock.release()
    assert.equal(await glide.get(key), null)
  } finally {
    if (glide) glide.close()
    await cluster.stop()
  }
})

test('iovalkey works as ioredis does: its database and key prefix are read', async () => {
  const valkey = new Valkey({ port: server.port, password: 'glide-secret', db: 3, keyPrefix: 'vk:' })
  try {
    const key = fresh('iovalkey')
    const lock = R.createLock(valkey, { timeout: 5000 })
    await lock.acquire(key)
    await check.select(3)
    assert.equal(await check.get(`vk:${key}`), lock._id)
    await lock.release()
    assert.equal(await check.exists(`vk:${key}`), 0)
    await check.select(0)
  } finally {
    valkey.disconnect()
  }
})
