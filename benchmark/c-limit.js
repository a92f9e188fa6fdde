'use strict'

/**
 * The "C limit" (informative): redis-benchmark (C) running the two commands
 * a lock cycle needs, SET key token PX ttl NX and EVALSHA compare-and-delete,
 * over ONE connection with as many commands in flight as the scenario has
 * workers: `redis-benchmark -c 1 -P <workers>`, i.e. what one connection
 * shared by <workers> workers could carry if the client cost nothing.
 *
 * redis-benchmark runs one command per invocation, so the two are run back to
 * back and combined: cycles/s = 1 / (1/rps_set + 1/rps_evalsha); latency
 * percentiles are approximated by adding the two commands' ones (per
 * pipeline round trip, not per cycle as for the contenders). Keys are
 * randomized with -r so the commands do not all hit one key.
 */

const { execFile } = require('child_process')

function run (args) {
  return new Promise((resolve, reject) => {
    execFile('redis-benchmark', args, { maxBuffer: 1 << 20, timeout: 120000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`redis-benchmark ${args.join(' ')} failed: ${err.message} ${stderr}`))
      resolve(stdout)
    })
  })
}

/** Parses redis-benchmark --csv: {rps, p50, p99} (ms). */
function parseCsv (out) {
  const lines = out.trim().split('\n').filter((l) => l.startsWith('"'))
  const header = lines[0].split(',').map((s) => s.replace(/"/g, ''))
  const row = lines[lines.length - 1].split('","').map((s) => s.replace(/"/g, ''))
  const at = (name) => Number(row[header.indexOf(name)])
  return { rps: at('rps'), p50: at('p50_latency_ms'), p99: at('p99_latency_ms') }
}

/** Requests per command: about 0.5–1 s each on a 2-core VM (a tenth when quick). */
function requestsFor (pipeline, quick) {
  const n = pipeline === 1 ? 5000 : Math.max(50000, pipeline * 400)
  return quick ? Math.max(1000, Math.round(n / 10)) : n
}

/**
 * One measurement with `workers` commands in flight on one connection.
 * Resolves to {cyclesPerSec, p50, p99, command} (latencies in ms).
 */
async function measure ({ host, port, workers, sha, quick }) {
  const n = requestsFor(workers, quick)
  const common = ['-h', host, '-p', String(port), '-c', '1', '-n', String(n), '-r', '1000000', '--csv']
  if (workers > 1) common.push('-P', String(workers))
  const setArgs = [...common, 'SET', 'lock:__rand_int__', 'token-0123456789', 'PX', '10000', 'NX']
  const evalArgs = [...common, 'EVALSHA', sha, '1', 'lock:__rand_int__', 'token-0123456789']
  const set = parseCsv(await run(setArgs))
  const ev = parseCsv(await run(evalArgs))
  return {
    cyclesPerSec: 1 / (1 / set.rps + 1 / ev.rps),
    p50: set.p50 + ev.p50,
    p99: set.p99 + ev.p99,
    command: `redis-benchmark ${setArgs.join(' ')} && redis-benchmark ${evalArgs.join(' ')}`
  }
}

/** Whether redis-benchmark can be run at all. */
function available () {
  return run(['--version']).then(() => true, () => false)
}

module.exports = { measure, available }
