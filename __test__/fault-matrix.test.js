'use strict'

/**
 * The fault matrix: every fault scenario over plain TCP, TLS and a Unix
 * socket, on the engine this run uses (scripts/test-engines.js runs the file
 * once per engine). Each scenario runs in a process of its own
 * (fixtures/fault-scenario.js) with an event-loop heartbeat and a bound on
 * every call; a stalled loop, a pending call or a process that does not exit
 * by itself fails the test here, however the child is stuck.
 */

const { describe, test, before, after } = require('node:test')
const assert = require('node:assert')
const { runNode } = require('./helpers/child')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { makeCertificates } = require('./helpers/tls')

const FIXTURE = path.join(__dirname, 'fixtures', 'fault-scenario.js')
const SCENARIOS = ['killed-under-load', 'silent', 'refused', 'blackhole', 'reset', 'half-open', 'latency', 'slow-redis', 'restart', 'redisson-restart', 'redisson-blackhole']
const LIMIT_MS = 20000

/** Runs one scenario; resolves to its report, or fails when it does not exit within LIMIT_MS. */
async function runScenario (transport, scenario, certDir) {
  const { code, signal, stdout: out, stderr: err } = await runNode([FIXTURE, transport, scenario, certDir], { boundMs: LIMIT_MS })
  // Killed, it could not stop the redis-servers it started (it says
  // which): stopped here.
  if (signal !== null) {
    for (const [, pid] of out.matchAll(/^PID (\d+)$/gm)) {
      try { process.kill(Number(pid), 'SIGKILL') } catch (_) {}
    }
  }
  const line = out.trim().split('\n').pop()
  let report = null
  try { report = JSON.parse(line) } catch (_) {}
  return { code, signal, report, out, err }
}

let certDir
before(() => {
  certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-matrix-'))
  makeCertificates(certDir)
})
after(() => { if (certDir) fs.rmSync(certDir, { recursive: true, force: true }) })

for (const transport of ['tcp', 'tls', 'unix']) {
  describe(`faults over ${transport} (engine ${process.env.REDISLOCK_RS_ENGINE || 'default'})`, () => {
    for (const scenario of SCENARIOS) {
      test(scenario, async () => {
        const { code, signal, report, err } = await runScenario(transport, scenario, certDir)
        assert.ok(signal === null,
          `the scenario process did not exit by itself within ${LIMIT_MS} ms (killed; a frozen event loop or a pending call). stderr: ${err.slice(-2000)}`)
        assert.ok(report, `no report (exit ${code}). stderr: ${err.slice(-2000)}`)
        assert.ok(report.ok, `${report.why}\nstderr: ${err.slice(-2000)}`)
        assert.strictEqual(code, 0)
        console.log(`# ${transport} ${scenario}: heartbeat max gap ${report.gap} ms; ${JSON.stringify(report.result)}`)
      })
    }
  })
}
