// Deliberate misuse: this file must NOT compile. __test__/types.test.js runs
// tsc on it and checks that every line marked `// error TSxxxx` fails with
// exactly that code, and that nothing else fails.

import { createLock, setDefaults, getAcquiredLocks, LockExtendError, type Lock } from 'redislock-rs'

const lock: Lock = createLock('redis://127.0.0.1:6379')

lock.acquire(123) // error TS2345
lock.extend('100') // error TS2345
createLock() // error TS2554
createLock(6379) // error TS2769
createLock(null) // error TS2769
createLock({ hots: 'localhost' }) // error TS2769
createLock('redis://localhost', { timeout: '100' }) // error TS2769
createLock('redis://localhost', { ttl: 100 }) // error TS2769
lock.acquire('k', (err: Error | null, value: string) => {}) // error TS2769
lock.release((err: string) => {}) // error TS2345
lock.release('k') // error TS2345
lock._id = 'mine' // error TS2540
const key: string = lock._key // error TS2322
setDefaults({ delay: 'soon' }) // error TS2322
const count: number = getAcquiredLocks() // error TS2322
new LockExtendError(42) // error TS2345
lock.acquire('k').then((value: string) => value) // error TS2769

export { key, count }
