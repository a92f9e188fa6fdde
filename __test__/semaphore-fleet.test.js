'use strict'

/**
 * A rolling migration, with processes: a fleet half on redis-semaphore 5.8.0
 * and half on our face, each member its own Node process, sharing one
 * mutex, semaphore or multi-semaphore (members taking 1 and 2 permits), on
 * one server and (the Redlock variants) on three. The holders' weight never
 * goes past the limit on one server, nor on three past what the quorum rule
 * allows (each holder counted on at least q of n servers, each server
 * holding at most `limit`: ⌊n × limit / q⌋; the limit itself for a mutex),
 * and every member gets the lock. Afterwards no server holds a place of
 * ours; what theirs left behind (redis-semaphore 5.8.0's Redlock
 * multi-semaphore does not give back an attempt short of a quorum:
 * __test__/semaphore-redlock.test.js) expires by its lease.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const { startRedis, admin } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')

const servers = []
let check
let seq = 0

before(async () => {
  for (let i = 0; i < 3; i++) servers.push(await startRedis())
  check = admin(servers[0].port)
})

after(async () => {
  await check.quit()
  for (const s of servers) await s.stop()
})

function member (impl, kind, ports, key, limit, permits, rounds, counter, bound) {
  return new Promise((resolve, reject) => {
    const args = [impl, kind, ports.join(','), key, limit, permits, rounds, counter, bound].map(String)
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'semaphore-fleet.js'), ...args])
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { err += d })
    const killer = setTimeout(() => child.kill('SIGKILL'), 60000)
    child.on('exit', (code, signal) => {
      clearTimeout(killer)
      if (code !== 0) return reject(new Error(`${impl} ${kind} exited ${code} ${signal}: ${err}`))
      resolve({ impl, kind, permits, ...JSON.parse(out) })
    })
  })
}

for (const count of [1, 3]) {
  for (const [kind, limit] of [['mutex', 1], ['semaphore', 2], ['multi', 3]]) {
    test(`redis-semaphore 5.8.0 and ours in separate processes share a ${kind}'s limit ${limit} on ${count} server(s)`, async () => {
      const ports = servers.slice(0, count).map((s) => s.port)
      const key = `fleet:${kind}:${count}:${process.pid}:${seq++}`
      const counter = `${key}:inside`
      const rounds = 20
      // Multi-semaphore members take 2 permits; a plain semaphore member
      // (1 place) shares the same set, as the libraries allow.
      const members = kind === 'multi'
        ? [['theirs', 'multi', 2], ['ours', 'multi', 2], ['theirs', 'semaphore', 1], ['ours', 'semaphore', 1]]
        : [['theirs', kind, 1], ['ours', kind, 1], ['theirs', kind, 1], ['ours', kind, 1]]
      const quorum = Math.floor(count / 2) + 1
      const bound = Math.floor(count * limit / quorum)
      const results = await Promise.all(members.map(([impl, k, permits]) => member(impl, k, ports, key, limit, permits, rounds, counter, bound)))
      for (const r of results) {
        assert.equal(r.overflows, 0, `${r.impl} ${r.kind} saw more than ${bound} inside: ${JSON.stringify(results)}`)
        assert.ok(r.locked > 0, `${r.impl} ${r.kind} never got in: ${JSON.stringify(results)}`)
      }
      assert.equal(await check.get(counter), '0')
      const ours = results.filter((r) => r.impl === 'ours').flatMap((r) => r.ids)
      const isOurs = (member) => ours.some((id) => member === id || member.startsWith(`${id}_`))
      for (const s of servers.slice(0, count)) {
        const c = admin(s.port)
        try {
          const left = [...await c.zrange(`semaphore:${key}`, 0, -1), await c.get(`mutex:${key}`)].filter((m) => m !== null)
          assert.deepEqual(left.filter(isOurs), [], 'every place of ours given back')
          // Theirs' leftovers, if any, expire by their lease (1 s).
          const until = Date.now() + 3000
          while (await c.exists(`mutex:${key}`, `semaphore:${key}`) !== 0 && Date.now() < until) await sleep(50)
          assert.equal(await c.exists(`mutex:${key}`, `semaphore:${key}`), 0, 'every place given back or expired')
        } finally {
          await c.quit()
        }
      }
    })
  }
}
