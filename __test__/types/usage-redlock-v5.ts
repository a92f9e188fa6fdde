// The node-redlock 5 face's typings, as a node-redlock 5 or
// @sesamecare-oss/redlock user writes them.
// Compiled with `tsc --noEmit --strict` by __test__/types.test.js.

import Redlock, { ExecutionError, ResourceLockedError, Lock, type ExecutionStats, type Settings } from 'redislock-rs/redlock/v5'
import { Redlock as Named } from 'redislock-rs/redlock/v5'

const settings: Settings = { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 200, automaticExtensionThreshold: 500, db: 0, wakeOnRelease: true }
const redlock = new Redlock(['redis://127.0.0.1:6379'], settings, { acquireScript: (s) => s })
const named: Named = redlock
redlock.on('error', (error: Error) => {
  if (error instanceof ResourceLockedError) return
  console.error(error)
})

async function use (): Promise<void> {
  let lock: Lock = await redlock.acquire(['a'], 5000)
  lock = await lock.extend(5000)
  const lost: AbortSignal = lock.signal
  void lost
  await lock.release()
  const next = await redlock.extend(await redlock.acquire(['b', 'c'], 1000, { retryCount: 0 }), 2000)
  const result = await redlock.release(next)
  const stats: ExecutionStats = await result.attempts[0]
  void [stats.votesFor.size, stats.votesAgainst.size, result.start]
  const value: number = await redlock.using(['d'], 5000, async (signal, context) => {
    if (signal.aborted) throw signal.error
    return context.extensions
  })
  await redlock.using(['e'], 5000, { retryCount: 1 }, async (signal) => signal.aborted)
  try {
    await redlock.acquire(['f'], 1000)
  } catch (err) {
    if (err instanceof ExecutionError) console.log(err.attempts.length)
  }
  // @ts-expect-error: resources are an array
  await redlock.acquire('g', 1000)
  void [value, named]
  await redlock.quit()
}

void use
