'use strict'

/**
 * Soak run (not a test): many acquire/release cycles, the same with locks
 * the lease keeper renews (`autoExtend`, a 30 s lease: a released one must
 * leave no renewal task behind, NOTES §35), and many locks created and
 * dropped (some while held), with RSS, V8 heap and the process's thread
 * count before and after; then a child process that holds a lock, drops it
 * and must exit on its own.
 *
 *   node --expose-gc benchmark/soak.js [--cycles 1000000] [--kept 250000] [--locks 100000] [--concurrency 64]
 */

const { spawn } = require('child_process')
const { threads, settle } = require('./process-stats')
const path = require('path')
const { startRedis } = require('../__test__/helpers/redis')
const redislock = require('..')

function arg (name, fallback) {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const CYCLES = arg('cycles', 1000000)
const KEPT = arg('kept', 250000)
const LOCKS = arg('locks', 100000)
const CONCURRENCY = arg('concurrency', 64)



function snapshot () {
  const m = process.memoryUsage()
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, threads: threads() }
}

const mb = (n) => (n / 1048576).toFixed(1)

function row (label, a, b) {
  return `| ${label.padEnd(32)} | ${mb(a.rss).padStart(8)} → ${mb(b.rss).padStart(8)} | ${mb(a.heapUsed).padStart(7)} → ${mb(b.heapUsed).padStart(7)} | ${String(a.threads).padStart(3)} → ${String(b.threads).padStart(3)} |`
}

async function cycles (url, total, options = { timeout: 10000 }) {
  let done = 0
  const loops = Array.from({ length: CONCURRENCY }, async (_, n) => {
    const lock = redislock.createLock(url, options)
    const key = `soak:cycle:${n}`
    while (done < total) {
      done++
      await lock.acquire(key)
      await lock.release()
    }
  })
  await Promise.all(loops)
  return done
}

async function createAndDrop (url, total) {
  let made = 0
  let held = 0
  const loops = Array.from({ length: CONCURRENCY }, async (_, n) => {
    while (made < total) {
      const i = made++
      const lock = redislock.createLock(url, { timeout: 1000 })
      if (i % 10 === 0) {
        await lock.acquire(`soak:drop:${i}`)
        if (i % 20 === 0) {
          held++ // dropped while held: its key expires on its own
          continue
        }
        await lock.release()
      }
    }
  })
  await Promise.all(loops)
  return { made, held }
}

function childExits (url) {
  const script = `
    const redislock = require(${JSON.stringify(path.join(__dirname, '..'))})
    const lock = redislock.createLock(${JSON.stringify(url)}, { timeout: 60000 })
    lock.acquire('soak:child').then(() => { console.log('held') })
  `
  return new Promise((resolve) => {
    const t0 = Date.now()
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    const limit = setTimeout(() => child.kill('SIGKILL'), 10000)
    child.on('exit', (code, signal) => {
      clearTimeout(limit)
      resolve({ code, signal, ms: Date.now() - t0, held: out.includes('held') })
    })
  })
}

async function main () {
  if (!global.gc) console.log('(run with node --expose-gc for meaningful heap figures)')
  const srv = await startRedis()
  try {
    const url = srv.url
    // Warm up: connection, scripts, JIT.
    await cycles(url, 20000)
    await settle()
    const start = snapshot()

    let t0 = Date.now()
    const n = await cycles(url, CYCLES)
    const cycleMs = Date.now() - t0
    await settle()
    const afterCycles = snapshot()

    t0 = Date.now()
    const kept = await cycles(url, KEPT, { timeout: 30000, autoExtend: true })
    const keptMs = Date.now() - t0
    await settle()
    const afterKept = snapshot()

    t0 = Date.now()
    const dropped = await createAndDrop(url, LOCKS)
    const dropMs = Date.now() - t0
    await new Promise((resolve) => setTimeout(resolve, 1200)) // held ones expire
    await settle()
    const afterDrop = snapshot()

    const child = await childExits(url)

    console.log(`\nSoak against redis-server ${srv.port}, concurrency ${CONCURRENCY}, Node ${process.version}\n`)
    console.log('| phase                            | RSS MB before → after | heap MB before → after | threads |')
    console.log('|----------------------------------|-----------------------|------------------------|---------|')
    console.log(row(`${n} acquire/release cycles`, start, afterCycles))
    console.log(row(`${kept} kept (autoExtend) cycles`, afterCycles, afterKept))
    console.log(row(`${dropped.made} locks created+dropped`, afterKept, afterDrop))
    console.log(row('whole run', start, afterDrop))
    console.log(`\ncycles: ${(n / (cycleMs / 1000)).toFixed(0)}/s (${(cycleMs / 1000).toFixed(1)} s); ` +
      `kept cycles: ${(kept / (keptMs / 1000)).toFixed(0)}/s; ` +
      `create+drop: ${(dropped.made / (dropMs / 1000)).toFixed(0)}/s, ${dropped.held} dropped while held`)
    console.log(`child holding a lock then dropping it: ${child.held ? 'acquired' : 'did NOT acquire'}, ` +
      `exited on its own with code ${child.code} after ${child.ms} ms${child.signal ? ` (killed: ${child.signal})` : ''}`)
    const leftover = redislock.getAcquiredLocks().length
    console.log(`locks still listed by getAcquiredLocks(): ${leftover} (the ${dropped.held} dropped while held stay listed, as in redislock)`)
  } finally {
    await srv.stop()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
