// The same API from an ES module: named and default imports.
import redislock, { createLock, LockAcquisitionError, type Lock } from 'redislock-rs'
import type Bluebird from 'bluebird'

const lock: Lock = createLock('redis://127.0.0.1:6379')
const p: Bluebird<void> = lock.acquire('esm:key')
await p
await lock.release()
lock.acquire('esm:key', (err) => { if (err instanceof LockAcquisitionError) console.error(err.message) })
const again: Lock = redislock.createLock({ host: '127.0.0.1', port: 6379 })
redislock.setDefaults({ retries: 0 })
// @ts-expect-error the key must be a string
lock.acquire(42)

export { again }
