'use strict'

/**
 * The "C limit": redis-benchmark (C, one connection per client) running the
 * same two commands a lock cycle needs, SET key token PX ttl NX and EVALSHA
 * compare-and-delete, at the same concurrency, with and without pipelining.
 *
 * redis-benchmark runs one command per invocation, so the two are run back to
 * back and combined: cycles/s = 1 / (1/rps_set + 1/rps_evalsha); cycle
 * latency percentiles are approximated by adding the two commands' ones.
 * Keys are randomized with -r so the clients do not all hit one key.
 */

const { execFile } = require('child_process')

function run (args) {
  return new Promise((resolve, reject) => {
    execFile('redis-benchmark', args, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
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
  // The command text may itself contain commas only if we put them there; we do not.
  const at = (name) => Number(row[header.indexOf(name)])
  return { rps: at('rps'), p50: at('p50_latency_ms'), p99: at('p99_latency_ms') }
}

function requestsFor (c, pipeline, quick) {
  let n = c === 1 ? 20000 : 100000
  if (pipeline > 1) n *= 4
  return quick ? Math.max(2000, Math.round(n / 5)) : n
}

/**
 * One measurement at concurrency `c`. Resolves to
 * {cyclesPerSec, p50, p99, cmdsPerCycle, command} (latencies in ms).
 */
async function measure ({ port, c, pipeline, sha, quick }) {
  const n = requestsFor(c, pipeline, quick)
  const common = ['-p', String(port), '-c', String(c), '-n', String(n), '-r', '1000000', '--csv']
  if (pipeline > 1) common.push('-P', String(pipeline))
  const setArgs = [...common, 'SET', 'lock:__rand_int__', 'token-0123456789', 'PX', '10000', 'NX']
  const evalArgs = [...common, 'EVALSHA', sha, '1', 'lock:__rand_int__', 'token-0123456789']
  const set = parseCsv(await run(setArgs))
  const ev = parseCsv(await run(evalArgs))
  return {
    cyclesPerSec: 1 / (1 / set.rps + 1 / ev.rps),
    p50: set.p50 + ev.p50,
    p99: set.p99 + ev.p99,
    cmdsPerCycle: 2,
    command: `redis-benchmark ${setArgs.join(' ')} && redis-benchmark ${evalArgs.join(' ')}`
  }
}

module.exports = { measure }
