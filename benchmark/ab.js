'use strict'

/**
 * Same-run A/B of two checkouts of redislock-rs (each with its addon built):
 *
 *   node benchmark/ab.js <dir A> <dir B> [--workers 1,16,128] [--rounds 5] [--ms 1500] [--id contender] [--servers 3]
 *
 * Starts one redis-server (`--servers N`: N of them, for the contenders
 * that lock on several, e.g. --id redislock-rs-redlock), then for every worker count and round runs the
 * redislock-rs contender of each checkout (its own benchmark/child.js, so
 * each loads its own package and addon) in a child process, A and B
 * alternating and the first one swapped every round, on the engine
 * REDISLOCK_RS_ENGINE names (default: the JS-thread engine). Prints the
 * medians of cycles/s and of the process's CPU per cycle (steadier than
 * throughput on a shared 2-core machine), and B ÷ A. Not a test: it fails
 * only if a child does.
 */

const path = require('path')
const { spawn } = require('child_process')
const { startRedis } = require('../__test__/helpers/redis')

const [dirA, dirB] = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const opt = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : fallback
}
const WORKERS = opt('workers', '1,16,128').split(',').map(Number)
const ROUNDS = Number(opt('rounds', 5))
const MS = Number(opt('ms', 1500))
const ENGINE = process.env.REDISLOCK_RS_ENGINE || 'js'
// Another of our contenders (benchmark/contenders.js), e.g. --id redislock-rs-semaphore-mutex
const ID = opt('id', null)
const SERVERS = Number(opt('servers', 1))

function measure (dir, servers, workers, round) {
  const port = servers[0].port
  const spec = {
    id: ID || (ENGINE === 'tokio' ? 'redislock-rs-tokio' : 'redislock-rs'),
    host: '127.0.0.1',
    port,
    mode: 'uncontended',
    workers,
    warmupMs: 300,
    durationMs: MS,
    key: `ab:${path.basename(dir)}:${workers}:${round}`,
    servers: servers.map((s) => ({ host: '127.0.0.1', port: s.port }))
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(dir, 'benchmark', 'child.js'), JSON.stringify(spec)], {
      env: { ...process.env, REDISLOCK_RS_ENGINE: ENGINE },
      stdio: ['ignore', 'pipe', 'inherit']
    })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${dir}: child exited ${code}`))
      const m = JSON.parse(out.trim().split('\n').pop())
      resolve({ cps: m.cyclesPerSec, cpu: m.procCpuUs })
    })
  })
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }

async function main () {
  if (!dirA || !dirB) throw new Error('usage: node benchmark/ab.js <dir A> <dir B>')
  const srvs = []
  for (let i = 0; i < SERVERS; i++) srvs.push(await startRedis())
  try {
    console.log(`A = ${dirA}\nB = ${dirB}\nengine ${ENGINE}, ${ROUNDS} rounds × ${MS} ms, medians of cycles/s and of process CPU µs per cycle\n`)
    console.log('| workers | A | B | B ÷ A | A min–max | B min–max | A µs/cycle | B µs/cycle |\n|---:|---:|---:|---:|---|---|---:|---:|')
    for (const workers of WORKERS) {
      const got = { A: [], B: [] }
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 ? ['B', 'A'] : ['A', 'B']
        for (const which of order) got[which].push(await measure(which === 'A' ? dirA : dirB, srvs, workers, round))
      }
      const cps = (xs) => xs.map((x) => x.cps)
      const a = median(cps(got.A))
      const b = median(cps(got.B))
      const cpu = (xs) => median(xs.map((x) => x.cpu)).toFixed(1)
      const span = (xs) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`
      console.log(`| ${workers} | ${Math.round(a)} | ${Math.round(b)} | ${(b / a).toFixed(2)}× | ${span(cps(got.A))} | ${span(cps(got.B))} | ${cpu(got.A)} | ${cpu(got.B)} |`)
    }
  } finally {
    for (const s of srvs) await s.stop()
  }
}

main().catch((err) => { console.error(err); process.exit(1) })
