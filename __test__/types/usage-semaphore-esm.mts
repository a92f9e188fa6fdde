// The same face from an ES module: named imports and the default.
import face, { Mutex, type LockOptions } from 'redislock-rs/semaphore'

const options: LockOptions = { lockTimeout: 3000 }
const mutex = new Mutex({ host: '127.0.0.1', port: 6379 }, 'esm', options)
await mutex.acquire()
await mutex.release()
const other = new face.Semaphore('redis://127.0.0.1:6379', 'esm', 2)

export { other }
