// Every overload of the public API, as a CommonJS TypeScript user writes it.
// Compiled with `tsc --noEmit --strict` by __test__/types.test.js; each
// `@ts-expect-error` line must really be an error, or tsc reports it unused.

import Bluebird = require('bluebird')
import IORedis from 'ioredis'
import { createClient } from 'redis'
import redislock = require('redislock-rs')
import {
  createLock,
  setDefaults,
  getAcquiredLocks,
  LockAcquisitionError,
  LockReleaseError,
  LockExtendError,
  type Lock,
  type LockOptions,
  type ConnectionOptions,
  type RedisClient,
  type LockCallback
} from 'redislock-rs'

// --- clients -----------------------------------------------------------------
const ioredis = new IORedis({ lazyConnect: true })
const nodeRedis = createClient({ url: 'redis://127.0.0.1:6379' })
const legacy = { send_command (_name: string, _args: unknown[], _cb?: unknown) { return true } }
const fromUrl: Lock = createLock('redis://127.0.0.1:6379/2')
const fromTlsUrl = createLock('rediss://user:pw@example.com:6380')
const fromIORedis: Lock = createLock(ioredis)
const fromNodeRedis: Lock = createLock(nodeRedis, { timeout: 5000 })
const fromLegacy = createLock(legacy, {})
const opts: ConnectionOptions = {
  host: '127.0.0.1',
  port: 6379,
  db: 3,
  username: 'default',
  password: 'secret',
  connectTimeout: 1000,
  commandTimeout: 500
}
const fromOptions = createLock(opts, { timeout: 1000, retries: -1, delay: 20 })
const fromTls = createLock({ host: 'redis.example', tls: true })
const fromSocket: Lock = createLock({ path: '/run/redis.sock', db: 1, keyPrefix: 'app:' })
const fromSocketUrl: Lock = createLock('unix:///run/redis.sock?db=1')
const fromTlsObject = createLock({
  url: 'rediss://redis.example:6380',
  tls: { ca: 'PEM', cert: Buffer.from('PEM'), key: ['a', Buffer.from('b')], servername: 'redis.example', rejectUnauthorized: false }
})
const asUnion: RedisClient = Math.random() > 0.5 ? 'redis://localhost' : { port: 6380 }
createLock(asUnion)

// --- lock properties -------------------------------------------------------------
const lock = createLock(ioredis, { timeout: 10000, retries: 3, delay: 100 })
const id: string = lock._id
const locked: boolean = lock._locked
const key: string | null = lock._key
const numbers: number[] = [lock.timeout, lock.retries, lock.delay]
lock.timeout = 2000
lock.retries = 0
lock.delay = 10

// --- promise forms ---------------------------------------------------------------
async function promiseForms (l: Lock): Promise<void> {
  const acquired: Bluebird<void> = l.acquire('app:job')
  await acquired
  const extended: Bluebird<void> = l.extend(5000)
  await extended
  const released: Bluebird<void> = l.release()
  await released
  // Bluebird-only methods are there.
  await l.acquire('app:job').timeout(1000).finally(() => {})
  await l.release().catch(LockReleaseError, (err) => { const m: string = err.message; return m })
  await l.acquire('k').then(() => l.extend(100)).then(() => l.release())
}

// --- callback forms --------------------------------------------------------------
function callbackForms (l: Lock): void {
  const cb: LockCallback = (err) => { if (err) console.error(err.message) }
  const r1: Bluebird<void> = l.acquire('app:job', (err) => {
    if (err) return
    l.extend(1000, (err2: Error | null) => {
      if (err2 !== null) return
      l.release(cb)
    })
  })
  l.acquire('other', function (err: Error | null): void {})
  l.release(() => {})
  l.extend(10, () => undefined)
  void r1
}

// --- module functions ------------------------------------------------------------
setDefaults({ timeout: 20000, retries: 2, delay: 10 })
setDefaults({})
setDefaults()
setDefaults(null)
const held: Lock[] = getAcquiredLocks()
held.forEach((l) => { const k: string | null = l._key; void k })
const options: LockOptions = { retries: 1 }
redislock.setDefaults(options)
const viaNamespace: Lock = redislock.createLock('redis://localhost')

// --- errors ---------------------------------------------------------------------
function errors (err: unknown): string {
  if (err instanceof LockAcquisitionError) {
    const name: 'LockAcquisitionError' = err.name
    return name + err.message + String(err.cause)
  }
  if (err instanceof LockReleaseError) return err.name
  if (err instanceof LockExtendError) return err.name
  const e: Error = new LockAcquisitionError('x', { cause: new Error('io') })
  const e2: Error = new LockExtendError('y')
  const e3: Error = new LockReleaseError()
  return [e, e2, e3].map((x) => x.message).join()
}
const ErrorClass: typeof LockAcquisitionError = redislock.LockAcquisitionError

// --- misuse the typings must refuse (each line must be an error) -------------------
// @ts-expect-error the key must be a string
lock.acquire(123)
// @ts-expect-error time must be a number
lock.extend('100')
// @ts-expect-error createLock needs a client
createLock()
// @ts-expect-error a number is not a client
createLock(6379)
// @ts-expect-error unknown connection option
createLock({ hots: 'localhost' })
// @ts-expect-error options are {timeout, retries, delay} numbers
createLock('redis://localhost', { timeout: '100' })
// @ts-expect-error the callback gets one argument: the error
lock.acquire('k', (err: Error | null, value: string) => {})
// @ts-expect-error the callback's error is not a string
lock.release((err: string) => {})
// @ts-expect-error release takes no key
lock.release('k')
// @ts-expect-error _id is read-only
lock._id = 'mine'
// @ts-expect-error _locked is read-only
lock._locked = true
// @ts-expect-error the promise resolves to nothing
const n: Bluebird<number> = lock.acquire('k')
// @ts-expect-error tls must be boolean or TLS settings
createLock({ host: 'h', tls: 'yes' })
// @ts-expect-error setDefaults takes numbers
setDefaults({ delay: 'soon' })

export {
  fromUrl, fromTlsUrl, fromIORedis, fromNodeRedis, fromLegacy, fromOptions, fromTls, fromTlsObject, fromSocket, fromSocketUrl,
  id, locked, key, numbers, promiseForms, callbackForms, viaNamespace, errors, ErrorClass, n
}
