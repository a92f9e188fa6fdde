// Types of redislock-rs/redlock: redlock 4.2.0's API as @types/redlock 4
// declares it, with `resource` as redlock 4.2.0 really has it (always an
// array on a Lock it made) and every client kind createLock takes.

import * as Bluebird from 'bluebird'
import { EventEmitter } from 'events'
import type { RedisClient } from './index'

export = Redlock

declare namespace Redlock {
  type Callback<T> = (err: any, value?: T) => void

  /** A lock on one or more resources. */
  class Lock {
    redlock: Redlock
    resource: string | string[]
    /** 16 random bytes, hex. */
    value: string | null
    /** When the lock's validity ends, in ms since the epoch (0 once released). */
    expiration: number
    attempts: number
    attemptsRemaining: number
    /** Beyond redlock 4.2.0: aborted with a LockLostError when an extend or unlock finds the lock lost. */
    readonly signal: AbortSignal
    constructor (redlock: Redlock, resource: string | string[], value: string | null, expiration: number, attempts: number, attemptsRemaining: number)
    unlock (callback?: Callback<void>): Bluebird<void>
    extend (ttl: number, callback?: Callback<Lock>): Bluebird<Lock>
  }

  class LockError extends Error {
    readonly name: 'LockError'
    /** The attempts made (0 when refused before any; undefined for a release). */
    attempts?: number
    constructor (message?: string, attempts?: number)
  }

  interface Options {
    /** The clocks' drift as a fraction of the TTL (0.01). */
    driftFactor?: number
    /** Attempts after the first (10); -1: until granted. */
    retryCount?: number
    /** ms between attempts (200). */
    retryDelay?: number
    /** ± ms of randomness per pause (100). */
    retryJitter?: number
    /**
     * Beyond redlock 4.2.0: a release announces itself on each resource's
     * channel and a waiting lock() tries again at once (false). Not with an
     * unlockScript transform.
     */
    wakeOnRelease?: boolean
    lockScript? (origLockScript: string): string
    unlockScript? (origUnlockScript: string): string
    extendScript? (origExtendScript: string): string
  }

  interface LockOptions {
    retryCount?: number
    retryDelay?: number
  }

  /** Anything createLock takes: a node_redis, node-redis, ioredis or iovalkey client, a URL or an options object. */
  type CompatibleRedisClient = RedisClient

  interface Script {
    value: string
    hash: string
  }
}

declare class Redlock extends EventEmitter {
  driftFactor: number
  retryCount: number
  retryDelay: number
  retryJitter: number
  lockScript: string
  unlockScript: string
  extendScript: string
  servers: Redlock.CompatibleRedisClient[]
  scripts: { lockScript: Redlock.Script, unlockScript: Redlock.Script, extendScript: Redlock.Script }

  constructor (clients: Redlock.CompatibleRedisClient[], options?: Redlock.Options)

  acquire (resource: string | string[], ttl: number, callback?: Redlock.Callback<Redlock.Lock>): Bluebird<Redlock.Lock>
  lock (resource: string | string[], ttl: number, callback?: Redlock.Callback<Redlock.Lock>): Bluebird<Redlock.Lock>
  acquireWithOptions (resource: string | string[], ttl: number, options: Redlock.LockOptions, callback?: Redlock.Callback<Redlock.Lock>): Bluebird<Redlock.Lock>
  lockWithOptions (resource: string | string[], ttl: number, options: Redlock.LockOptions, callback?: Redlock.Callback<Redlock.Lock>): Bluebird<Redlock.Lock>
  disposer (resource: string | string[], ttl: number, errorHandler?: (err: any) => void): Bluebird.Disposer<Redlock.Lock>
  release (lock: Redlock.Lock, callback?: Redlock.Callback<void>): Bluebird<void>
  unlock (lock: Redlock.Lock, callback?: Redlock.Callback<void>): Bluebird<void>
  extend (lock: Redlock.Lock, ttl: number, callback?: Redlock.Callback<Redlock.Lock>): Bluebird<Redlock.Lock>
  quit (callback?: Redlock.Callback<void>): Bluebird<void>

  addListener (event: 'clientError', listener: (err: any) => void): this
  on (event: 'clientError', listener: (err: any) => void): this
  once (event: 'clientError', listener: (err: any) => void): this
  removeListener (event: 'clientError', listener: (err: any) => void): this
  off (event: 'clientError', listener: (err: any) => void): this
}
