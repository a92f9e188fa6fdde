'use strict'

/**
 * Memory scenario, run in a fresh process per contender (with the
 * contender's env, e.g. REDISLOCK_RS_ENGINE):
 *   node --expose-gc benchmark/memory.js <contender> <host> <port> <cycles> <workers>
 * Warms up, then runs <cycles> acquire+release cycles on <workers> workers
 * (distinct keys), forcing GC and reading heap/RSS after the warm-up, half
 * way and at the end. Prints one JSON line.
 */

const { byId } = require('./contenders')

async function main () {
  const [id, host, portText, cyclesText, workersText] = process.argv.slice(2)
  if (typeof global.gc !== 'function') throw new Error('run with --expose-gc')
  const contender = byId[id]
  const port = Number(portText)
  const total = Number(cyclesText)
  const nWorkers = Number(workersText) || 16
  const inst = await contender.open({ host, port })
  const workers = Array.from({ length: nWorkers }, (_, i) => inst.worker(`bench:mem:${id}:${i}`))

  async function run (n) {
    let left = n
    await Promise.all(workers.map(async (w) => {
      while (left > 0) {
        left--
        await w.cycle()
      }
    }))
  }
  function snapshot (label) {
    global.gc()
    global.gc()
    const m = process.memoryUsage()
    return { label, heapUsed: m.heapUsed, rss: m.rss, external: m.external }
  }

  const warm = Math.max(2000, Math.round(total / 10))
  await run(warm)
  const points = [snapshot(`after ${warm} warm-up cycles`)]
  const t0 = process.hrtime.bigint()
  await run(Math.floor(total / 2))
  points.push(snapshot(`+${Math.floor(total / 2)} cycles`))
  await run(total - Math.floor(total / 2))
  points.push(snapshot(`+${total} cycles`))
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  await inst.close()
  process.stdout.write(JSON.stringify({ id, total, workers: nWorkers, seconds, points }) + '\n')
}

main().then(() => process.exit(0), (err) => {
  console.error(err)
  process.exit(1)
})
