// The Redisson face's typings, as a node-redisson user writes them.
// Compiled with `tsc --noEmit --strict` by __test__/types.test.js.

import { Redisson, TimeUnit, RedissonLockError, type IRLock, type IRReadWriteLock, type IRedissonConfig, type RLockWaitTime, type RLockLeaseTime } from 'redislock-rs/redisson'

const config: IRedissonConfig = { redis: { options: { host: '127.0.0.1', port: 6379 } }, lockWatchdogTimeout: 30000n }
const redisson = new Redisson(config)
const fromClient = new Redisson({ redis: { client: 'redis://127.0.0.1:6379' }, eventAdapter: 'streams', lockWatchdogTimeout: 1000 })
const acknowledged = new Redisson({ redis: { options: { port: 6379 } }, replicas: 1, replicaTimeout: 500 })
void acknowledged.getLock('acked')

async function use (): Promise<void> {
  const lock: IRLock = redisson.getLock('name', 'client')
  const wait: RLockWaitTime = false
  const lease: RLockLeaseTime = true
  const got: boolean = await lock.tryLock(wait, lease, TimeUnit.SECONDS)
  await lock.tryLock(0, 5000n)
  await lock.lock()
  await lock.lock(10, TimeUnit.MINUTES)
  await lock.unlock()
  const forced: boolean = await lock.forceUnlock()
  const locked: boolean = await lock.isLocked()
  const ms: bigint = TimeUnit.now() + TimeUnit.HOURS.toMillis(1)
  const id: string = lock.clientId
  const lost: AbortSignal | null = lock.signal
  void [got, forced, locked, ms, id, lost]
  try {
    await fromClient.getLock('x').unlock()
  } catch (err) {
    if (err instanceof RedissonLockError) console.log(err.lockName, err.nodeId, err.clientId)
  }
  const rw: IRReadWriteLock = new Redisson({ redis: { options: {} }, fairLockWaitTimeout: 2000 }).getReadWriteLock('doc', 'me')
  const reading: boolean = await rw.readLock().tryLock(1, 10, TimeUnit.SECONDS)
  await rw.writeLock().lock(5000)
  const fair: IRLock = redisson.getFairLock('queue')
  await fair.lock()
  void [reading, rw.name, fair]
  // @ts-expect-error a read-write lock is not itself a lock
  await rw.lock()
  // @ts-expect-error waitTime true is not a wait time
  await lock.tryLock(true, 5000)
  // @ts-expect-error config needs redis
  void new Redisson({})
  await redisson.quit()
}
void use
