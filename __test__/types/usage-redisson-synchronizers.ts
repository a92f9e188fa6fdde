// The Redisson face's synchronizers (Java Redisson's RSemaphore,
// RPermitExpirableSemaphore, RCountDownLatch), as a user writes them.
// Compiled with `tsc --noEmit --strict` by __test__/types.test.js; each
// expect-error line below must really be an error.

import { Redisson, TimeUnit, type RSemaphore, type RPermitExpirableSemaphore, type RCountDownLatch, type PermitId } from 'redislock-rs/redisson'

const redisson = new Redisson({ redis: { options: { port: 6379 } } })

async function use (): Promise<void> {
  const sem: RSemaphore = redisson.getSemaphore('sem')
  const set: boolean = await sem.trySetPermits(3)
  await sem.acquire()
  await sem.acquire(2)
  const one: boolean = await sem.tryAcquire()
  const two: boolean = await sem.tryAcquire(2, 5, TimeUnit.SECONDS)
  const three: boolean = await sem.tryAcquire(1, 500n)
  await sem.release()
  await sem.release(2)
  const free: number = await sem.availablePermits()
  await sem.addPermits(-1)
  const drained: number = await sem.drainPermits()
  const setForAWhile: boolean = await sem.trySetPermits(3, 10, TimeUnit.MINUTES)
  const setForMs: boolean = await sem.trySetPermits(3, 500n)
  const releasedIfThere: boolean = await sem.releaseIfExists()
  const releasedTwo: boolean = await sem.releaseIfExists(2)
  const name: string = sem.name

  const pes: RPermitExpirableSemaphore = redisson.getPermitExpirableSemaphore('pes')
  await pes.trySetPermits(2)
  const id: PermitId = await pes.acquire()
  const leased: string = await pes.acquire(10, TimeUnit.SECONDS)
  const maybe: PermitId | null = await pes.tryAcquire()
  const waited: string | null = await pes.tryAcquire(100, 1000)
  const withUnit: string | null = await pes.tryAcquire(1, TimeUnit.SECONDS)
  const noLease: string | null = await pes.tryAcquire(1, null, TimeUnit.SECONDS)
  await pes.release(id)
  const released: boolean = await pes.tryRelease(leased)
  const updated: boolean = await pes.updateLeaseTime(leased, 5, TimeUnit.MINUTES)
  const left: number = await pes.availablePermits()
  await pes.addPermits(1)
  const total: number = await pes.getPermits()
  const held: number = await pes.acquiredPermits()
  await pes.setPermits(5)
  const leaseLeft: number = await pes.getLeaseTime(leased)

  const latch: RCountDownLatch = redisson.getCountDownLatch('latch')
  const counted: boolean = await latch.trySetCount(2)
  await latch.countDown()
  const count: number = await latch.getCount()
  const open: boolean = await latch.await()
  const inTime: boolean = await latch.await(5n, TimeUnit.SECONDS)

  // @ts-expect-error a permit count is a number
  await sem.trySetPermits('3')
  // @ts-expect-error release answers nothing
  const nothing: boolean = await sem.release()
  // @ts-expect-error tryAcquire may answer null
  const sure: string = await pes.tryAcquire()
  // @ts-expect-error a permit id is a string
  await pes.release(42)
  // @ts-expect-error updateLeaseTime needs a lease
  await pes.updateLeaseTime(id)
  // @ts-expect-error the unit is a TimeUnit
  await latch.await(5, 'seconds')
  // @ts-expect-error a time to live's unit is a TimeUnit
  await sem.trySetPermits(3, 5, 'seconds')
  // @ts-expect-error releaseIfExists answers a boolean
  const noCount: number = await sem.releaseIfExists()
  // @ts-expect-error getLeaseTime needs a permit id
  await pes.getLeaseTime()
  // @ts-expect-error setPermits needs a count
  await pes.setPermits()
  void [set, one, two, three, free, drained, name, maybe, waited, withUnit, noLease, released, updated, left, counted, count, open, inTime, nothing, sure,
    setForAWhile, setForMs, releasedIfThere, releasedTwo, total, held, leaseLeft, noCount]
}
void use
