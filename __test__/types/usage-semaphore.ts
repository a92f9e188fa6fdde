// redis-semaphore 5.8's README usage, with only the import changed.
import { Mutex, Semaphore, MultiSemaphore, LostLockError, TimeoutError, defaultTimeoutOptions, type LockOptions, type TimeoutOptions, type LockLostCallback } from 'redislock-rs/semaphore'
import Redis from 'ioredis'

const redisClient = new Redis()

async function doSomething (): Promise<void> {
  const mutex = new Mutex(redisClient, 'lockingResource')
  await mutex.acquire()
  try {
    const id: string = mutex.identifier
    const held: boolean = mutex.isAcquired
    console.log(id, held)
  } finally {
    await mutex.release()
  }
}

const onLockLost: LockLostCallback = function (err: LostLockError) {
  console.error(err.message, this.identifier)
}
const timeouts: TimeoutOptions = { lockTimeout: 5000, acquireTimeout: 1000, acquireAttemptsLimit: 3, retryInterval: 50, refreshInterval: 4000 }
const options: LockOptions = { ...timeouts, identifier: 'worker-1', acquiredExternally: true, onLockLost, wakeOnRelease: true }

async function limited (): Promise<boolean> {
  const semaphore = new Semaphore(redisClient, 'tasks', 3, options)
  const multi = new MultiSemaphore('redis://127.0.0.1:6379', 'tasks', 3, 2, { lockTimeout: defaultTimeoutOptions.lockTimeout })
  const controller = new AbortController()
  const got: boolean = await semaphore.tryAcquire(controller.signal)
  try {
    await multi.acquire()
  } catch (err) {
    if (err instanceof TimeoutError) console.error(err.message)
  }
  // Beyond redis-semaphore: the lost-lock signal.
  const signal: AbortSignal = multi.signal
  signal.addEventListener('abort', () => console.error(signal.reason))
  multi.stopRefresh()
  await multi.release()
  return got
}

// @ts-expect-error a semaphore needs its limit
const broken = new Semaphore(redisClient, 'tasks')

export { doSomething, limited, broken }
