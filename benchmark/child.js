'use strict'

/**
 * One contender's measurement, in a process of its own:
 *
 *   node benchmark/child.js '<json spec>'
 *
 * spec: {id, host, port, mode, workers, warmupMs, durationMs, key,
 *        delay, csMs, servers, serverCpu}, `servers` (the quorum section:
 *        every server's {host, port}; the cluster section: every
 *        primary's, the seed nodes; Redis command counts are then summed
 *        over them), `serverCpu` (the valkey section; modes 'uncontended'
 *        and 'contended'): also the server's CPU time (INFO cpu, user +
 *        system) over the measured interval, per cycle (`serverCpuUs`),
 *        mode one of
 * - 'uncontended': `workers` workers, each on its own key (`key:<i>`),
 *   acquire + release in a loop;
 * - 'contended': `workers` workers on one key, retrying every `delay` ms,
 *   holding the lock `csMs` ms;
 * - 'audit': like 'uncontended', but counts the commands the contender
 *   sends (MONITOR; slows Redis down, so never timed);
 * - 'handoff' (the Redisson face's contenders, and the wake-on-release
 *   section's: contenders.js WAKE): `workers` waiters on one key, each with
 *   its own lock object, acquire (waiting forever; redislock-face
 *   contenders retry every `delay` ms with their own mechanism) + release
 *   with a ~0 ms hold; the time from a release() call to the next
 *   acquisition (measure.js runHandoffs; spec also has minHandoffs, capMs,
 *   and `order`: also count the grants that went to the longest-waiting
 *   waiter, for the fair lock);
 * - 'rw' (the redisson-sync section): `workers` readers and one writer on
 *   ONE name (contender.rw(key, {readers, csMs})), run together
 *   (measure.js runGroups): cycles/s per group;
 * - 'shared' (the redisson-sync section): `workers` workers on ONE
 *   semaphore of `limit` permits (contender.shared(key, {workers, limit})),
 *   acquire + release in a loop.
 *
 * The contender opens one Redis connection shared by all its workers; the
 * harness's own INFO / MONITOR connections are plain sockets (redis-raw.js).
 * Prints one JSON line on stdout: the measurement, the engine redislock-rs
 * ran on (null for other contenders) and the names of this process's
 * threads that start with "redislock-rs" after the last release.
 */

const { byId } = require('./contenders')
const { runWorkers, runGroups, runHandoffs, threadNames } = require('./measure')
const raw = require('./redis-raw')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The engine redislock-rs uses in this process, checked against the one asked for. */
function engineOf (contender) {
  if (!contender.engine) return null
  let engine
  try {
    engine = require('../lib/native/bridge').defaultEngine()
  } catch (_) {
    return 'unknown'
  }
  if (engine !== contender.engine) throw new Error(`${contender.id}: asked for engine ${contender.engine}, got ${engine}`)
  return engine
}

/** INFO commandstats of every server the spec names (spec.servers, else host:port), summed. */
async function statsReader (spec) {
  const where = spec.servers || [{ host: spec.host, port: spec.port }]
  const readers = []
  try {
    for (const s of where) readers.push(await raw.commandStatsReader(s.host, s.port))
  } catch (err) {
    for (const r of readers) r.close()
    throw err
  }
  const read = async () => {
    const sum = {}
    for (const counts of await Promise.all(readers.map((r) => r()))) {
      for (const [k, v] of Object.entries(counts)) sum[k] = (sum[k] || 0) + v
    }
    return sum
  }
  read.close = () => { for (const r of readers) r.close() }
  return read
}

async function audit (inst, spec, workers) {
  const mon = await raw.monitor(spec.host, spec.port)
  try {
    await sleep(100)
    mon.reset()
    const r = await runWorkers(workers, spec.durationMs, null)
    await sleep(200) // let the last MONITOR lines arrive
    const counts = mon.counts()
    const total = Object.values(counts).reduce((a, b) => a + b, 0)
    return {
      cycles: r.cycles,
      sentPerCycle: total / r.cycles,
      sent: Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / r.cycles]))
    }
  } finally {
    mon.close()
  }
}

async function main () {
  const spec = JSON.parse(process.argv[2])
  const contender = byId[spec.id]
  if (!contender) throw new Error(`unknown contender ${spec.id}`)
  const inst = await contender.open({ host: spec.host, port: spec.port, servers: spec.servers })
  if (spec.mode === 'handoff') return handoff(contender, inst, spec)
  if (spec.mode === 'rw') return rw(contender, inst, spec)
  const workers = spec.mode === 'shared'
    ? await inst.shared(spec.key, { workers: spec.workers, limit: spec.limit })
    : Array.from({ length: spec.workers }, (_, i) => spec.mode === 'contended'
      ? inst.contended(spec.key, { delay: spec.delay, csMs: spec.csMs })
      : inst.worker(`${spec.key}:${i}`))
  await runWorkers(workers, spec.warmupMs, null)
  let result
  if (spec.mode === 'audit') {
    result = await audit(inst, spec, workers)
  } else {
    const stats = await statsReader(spec)
    let cpu = null
    try {
      // The server's CPU time around runWorkers: its window plus the two
      // INFO commandstats it sends (a few µs of server time).
      cpu = spec.serverCpu ? await raw.serverCpuReader(spec.host, spec.port) : null
      const cpu0 = cpu && await cpu()
      result = await runWorkers(workers, spec.durationMs, stats)
      if (cpu) result.serverCpuUs = (await cpu() - cpu0) * 1e6 / result.cycles
    } finally {
      stats.close()
      if (cpu) cpu.close()
    }
  }
  const names = threadNames()
  result.id = spec.id
  result.pid = process.pid
  result.engine = engineOf(contender)
  result.ourThreads = names && names.filter((n) => n.startsWith('redislock-rs'))
  result.threads = names && names.length
  await inst.close()
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

/** 'rw' mode: `spec.workers` readers and one writer on one name, warm-up, then measured together. */
async function rw (contender, inst, spec) {
  const { readers, writer } = inst.rw(spec.key, { readers: spec.workers, csMs: spec.csMs })
  const groups = { readers, writer: [writer] }
  await runGroups(groups, spec.warmupMs, null)
  const stats = await statsReader(spec)
  let result
  try {
    result = await runGroups(groups, spec.durationMs, stats)
  } finally {
    stats.close()
  }
  result.id = spec.id
  result.pid = process.pid
  result.engine = engineOf(contender)
  await inst.close()
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

/**
 * Handoff mode. Waiters still blocked at the end are abandoned: the result is
 * written and the process exits, without close(): with waits pending,
 * node-redisson's quit() makes its leftover wait timers and handlers write
 * to a closed connection (EPIPE / "Connection is closed" on stderr).
 */
async function handoff (contender, inst, spec) {
  const waiters = Array.from({ length: spec.workers }, () => inst.waiter(spec.key, { delay: spec.delay }))
  const result = await runHandoffs(waiters, spec)
  result.id = spec.id
  result.pid = process.pid
  result.engine = engineOf(contender)
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
