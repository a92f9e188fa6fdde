'use strict'

/**
 * A rolling migration, with processes: a fleet half on redlock (4.2.0, or
 * node-redlock 5 as @sesamecare-oss/redlock 1.4.0) and half on our face for
 * it, each member its own Node process, contending for resources that
 * overlap (one resource, or several that share one), on one server and on
 * three. Nobody may be inside together, and every member gets the lock.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const { startRedis, admin } = require('./helpers/redis')

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

function member (impl, ports, resources, rounds, inside) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'redlock-fleet.js'), impl, ports.join(','), resources.join(','), String(rounds), inside])
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { err += d })
    const killer = setTimeout(() => child.kill('SIGKILL'), 60000)
    child.on('exit', (code, signal) => {
      clearTimeout(killer)
      if (code !== 0) return reject(new Error(`${impl} exited ${code} ${signal}: ${err}`))
      resolve({ impl, ...JSON.parse(out) })
    })
  })
}

const FLEETS = [['redlock 4.2.0', 'theirs4', 'ours4'], ['@sesamecare-oss/redlock 1.4.0', 'theirs5', 'ours5']]

for (const [name, theirs, ours] of FLEETS) {
  for (const count of [1, 3]) {
    test(`${name} and ours, in separate processes on ${count} server(s), exclude each other on one resource and on several that share one`, async () => {
      const ports = servers.slice(0, count).map((s) => s.port)
      const tag = `fleet:${theirs}:${count}:${process.pid}:${seq++}`
      const shared = `${tag}:shared`
      const inside = `${tag}:inside`
      const rounds = 25
      const results = await Promise.all([
        member(theirs, ports, [shared], rounds, inside),
        member(ours, ports, [shared], rounds, inside),
        member(theirs, ports, [`${tag}:a`, shared], rounds, inside),
        member(ours, ports, [shared, `${tag}:b`], rounds, inside)
      ])
      for (const r of results) {
        assert.equal(r.overlaps, 0, `${r.impl} found another holder inside: ${JSON.stringify(results)}`)
        assert.ok(r.locked > 0, `${r.impl} never got the lock: ${JSON.stringify(results)}`)
      }
      assert.equal(await check.get(inside), '0')
      assert.equal(await check.exists(shared, `${tag}:a`, `${tag}:b`), 0, 'every lock released')
    })
  }
}
