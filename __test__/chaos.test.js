'use strict'

/**
 * Mutual exclusion under chaos: several child processes, each with many
 * workers, contend for a few keys through a TCP proxy while the test
 * restarts Redis (gracefully and with SIGKILL; AOF with fsync on every
 * write, so held locks survive), resets, strands and blackholes the
 * connections. No two critical sections on one key may overlap while the
 * lock's validity (5 s, far longer than a section) lasts; every process
 * must finish its work and exit on its own.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawn } = require('child_process')
const { startRedis } = require('./helpers/redis')
const { startProxy } = require('./helpers/proxy')
const { sleep } = require('./helpers/wait')

const PROCESSES = 3
const WORKERS = 15
const KEYS = 3
const DURATION = 9000
const TTL = 5000

let dir, srv, proxy
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-chaos-'))
  srv = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] })
  proxy = await startProxy(srv.port)
})
after(async () => {
  if (proxy) await proxy.close()
  if (srv) await srv.stop()
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

function runChild () {
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'chaos-worker.js')], {
    env: {
      ...process.env,
      CHAOS_PORT: String(proxy.port),
      CHAOS_KEYS: String(KEYS),
      CHAOS_WORKERS: String(WORKERS),
      CHAOS_DURATION: String(DURATION),
      CHAOS_TTL: String(TTL)
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const done = new Promise((resolve) => {
    const limit = setTimeout(() => { child.kill('SIGKILL'); resolve({ hung: true, stderr }) }, DURATION + 15000)
    child.on('exit', (code, signal) => {
      clearTimeout(limit)
      resolve({ code, signal, stdout, stderr })
    })
  })
  return { child, done }
}

test('no overlapping critical sections while Redis restarts and connections are cut', async () => {
  const children = Array.from({ length: PROCESSES }, runChild)
  const faults = []
  const at = async (ms, name, action) => {
    await sleep(ms)
    const t0 = Date.now()
    await action()
    faults.push(`${name} (${Date.now() - t0} ms)`)
  }
  await at(1200, 'connections reset', () => proxy.drop(true))
  await at(1200, 'graceful restart', () => srv.restart())
  await at(1200, 'half-open sockets', () => proxy.strand())
  await at(1200, 'blackhole 700 ms', async () => { proxy.blackhole(); await sleep(700); proxy.forward() })
  await at(1200, 'SIGKILL + restart', async () => { await srv.stop(true); await srv.start() })
  await at(800, 'connections dropped (FIN)', () => proxy.drop(false))

  const results = await Promise.all(children.map((c) => c.done))
  const sections = []
  const errors = {}
  for (const r of results) {
    assert.ok(!r.hung, `a worker process did not exit on its own: ${r.stderr}`)
    assert.strictEqual(r.code, 0, `worker exited with ${r.code}/${r.signal}: ${r.stderr}`)
    const report = JSON.parse(r.stdout.trim().split('\n').pop())
    assert.ok(!report.crashed, report.crashed)
    sections.push(...report.sections)
    for (const [k, n] of Object.entries(report.errors)) errors[k] = (errors[k] || 0) + n
  }

  // Overlaps: per key, sorted by start, a section starting before the
  // previous one ended (within its validity) is a violation. Times are µs
  // of CLOCK_MONOTONIC: with Date.now()'s milliseconds, a section that
  // ended in the very millisecond the next one began tied with it on
  // start, sorted after it, and counted as an overlap that was none.
  let overlaps = 0
  for (let k = 0; k < KEYS; k++) {
    const mine = sections.filter((s) => s[0] === `chaos:${k}`).sort((a, b) => a[1] - b[1])
    let prev = null
    for (const s of mine) {
      if (prev && s[1] < Math.min(prev[2], prev[1] + TTL * 1000)) overlaps++
      if (!prev || s[2] > prev[2]) prev = s
    }
  }
  for (const name of Object.keys(errors)) {
    assert.match(name, /^(acquire:LockAcquisitionError|release:LockReleaseError):/, `unexpected error kind ${name}`)
  }
  console.log(`# chaos: ${PROCESSES} processes x ${WORKERS} workers on ${KEYS} keys for ${DURATION} ms; faults: ${faults.join(', ')}`)
  console.log(`# chaos: ${sections.length} critical sections completed, ${overlaps} overlapping; errors: ${JSON.stringify(errors)}`)
  assert.strictEqual(overlaps, 0)
  assert.ok(sections.length >= 100, `only ${sections.length} critical sections completed`)
})
