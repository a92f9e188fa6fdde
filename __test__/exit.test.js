'use strict'

/**
 * The addon holds nothing that keeps Node's event loop alive: a script that
 * acquires, releases and quits its client exits on its own, promptly, also
 * when Redis is unreachable; and a process that exits with operations
 * still pending exits with its own code.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const { useRedis, freePort } = require('./helpers/redis')

const redis = useRedis()

function runScript (kind, port, script = 'exit-script.js') {
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', script), ...(kind === null ? [] : [kind]), String(port)])
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    const killer = setTimeout(() => child.kill('SIGKILL'), 15000)
    child.on('exit', (code, signal) => {
      clearTimeout(killer)
      resolve({ code, signal, out: out.trim(), ms: Date.now() - started })
    })
  })
}

for (const kind of ['redis3', 'ioredis', 'redis', 'url']) {
  test(`exits on its own after acquire/release with a ${kind} client`, async () => {
    const r = await runScript(kind, redis.server.port)
    assert.equal(r.signal, null, `killed after ${r.ms} ms: ${r.out}`)
    assert.equal(r.code, 0, r.out)
    assert.equal(r.out, 'released')
    assert.ok(r.ms < 10000, `took ${r.ms} ms`)
  })
}

test('exits on its own after failing against an unreachable Redis', async () => {
  const r = await runScript('url', await freePort())
  assert.equal(r.signal, null, `killed after ${r.ms} ms: ${r.out}`)
  assert.equal(r.code, 0, r.out)
  assert.equal(r.out, 'failed: LockAcquisitionError')
})

test('process.exit() with operations still pending exits cleanly (no abort while they are dropped)', async () => {
  const r = await runScript(null, redis.server.port, 'exit-pending.js')
  assert.equal(r.signal, null, `died of ${r.signal} after ${r.ms} ms: ${r.out}`)
  assert.equal(r.code, 0, r.out)
  assert.equal(r.out, 'exiting')
})
