'use strict'

/**
 * Soak run of the topology features (not a test): contended acquire /
 * release cycles (32 workers on 8 keys) on a 3-server Redlock with
 * autoExtend and wakeOnRelease, then on a 3-primary Redis Cluster with
 * sharded wake-ups, then the Redlock again; RSS after a GC at every fifth
 * of each phase. Its servers are its own (free ports), stopped at the end.
 *
 *   node --expose-gc benchmark/soak-topologies.js
 */

const { startRedis } = require('../__test__/helpers/redis')
const { startCluster } = require('../__test__/helpers/cluster')
const R = require('..')
const mb = () => { global.gc(); return (process.memoryUsage().rss / 1048576).toFixed(1) }
async function phase (name, make, keys, cycles, conc) {
  let done = 0
  const marks = []
  const worker = async (w) => {
    const lock = make()
    while (done < cycles) {
      const key = keys[(w + done) % keys.length]
      try { await lock.acquire(key); await lock.release() } catch (_) {}
      done++
      if (done % (cycles / 5) === 0) marks.push(mb())
    }
  }
  const t0 = Date.now()
  await Promise.all(Array.from({ length: conc }, (_, w) => worker(w)))
  console.log(`${name}: ${cycles} cycles in ${Date.now() - t0} ms, RSS MB at 20/40/60/80/100%: ${marks.join(' ')}`)
}
;(async () => {
  const servers = []
  for (let i = 0; i < 3; i++) servers.push(await startRedis())
  const cluster = await startCluster({ masters: 3 })
  try {
    const all = servers.map((s) => ({ host: '127.0.0.1', port: s.port }))
    const keys = Array.from({ length: 8 }, (_, i) => `soak:${i}`)
    await phase('quorum autoExtend+wake+signal', () => R.createLock(all, { timeout: 2000, retries: 50, delay: 20, autoExtend: true, wakeOnRelease: true }), keys, 40000, 32)
    await phase('cluster sharded wake', () => R.createLock({ cluster: cluster.seeds }, { timeout: 2000, retries: 50, delay: 20, wakeOnRelease: true }), keys, 40000, 32)
    await phase('quorum autoExtend+wake+signal (again)', () => R.createLock(all, { timeout: 2000, retries: 50, delay: 20, autoExtend: true, wakeOnRelease: true }), keys, 40000, 32)
  } finally {
    for (const s of servers) await s.stop()
    await cluster.stop()
  }
})()
