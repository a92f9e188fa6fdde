// Type definitions for redislock-rs/semaphore: redis-semaphore 5.8.0's
// public declarations (its mutexes and semaphores, and their Redlock
// variants over independent servers), plus
// what this package adds (`signal`, every client kind createLock takes).

import type { RedisClient as AnyClient } from './index'

/** Anything createLock takes: a node_redis, node-redis, ioredis or iovalkey client, a URL or an options object. */
export type RedisClient = AnyClient

export declare class LostLockError extends Error {
}

export declare class TimeoutError extends Error {
}

export interface LockLostCallback {
  (this: Lock, err: LostLockError): void
}

export interface TimeoutOptions {
  lockTimeout?: number
  acquireTimeout?: number
  acquireAttemptsLimit?: number
  retryInterval?: number
  refreshInterval?: number
}

export interface LockOptions extends TimeoutOptions {
  /**
   * @deprecated Use `identifier` + `acquiredExternally: true` instead.
   */
  externallyAcquiredIdentifier?: string
  /**
   * @deprecated Provide custom `identifier` instead.
   */
  identifierSuffix?: string
  /** Identifier of lock. By default is `crypto.randomUUID()`. */
  identifier?: string
  /** With `identifier`: the first acquire refreshes the lock another process took. */
  acquiredExternally?: true
  onLockLost?: LockLostCallback
  /**
   * Beyond redis-semaphore: a release announces itself (PUBLISH in the
   * release script) and a waiting acquire tries again at once instead of
   * after its retryInterval (false).
   */
  wakeOnRelease?: boolean
}

export declare const defaultTimeoutOptions: {
  lockTimeout: number
  acquireTimeout: number
  acquireAttemptsLimit: number
  retryInterval: number
}

declare abstract class Lock {
  protected abstract _kind: string
  protected abstract _key: string
  protected _identifier: string
  protected _refreshTimeInterval: number
  protected _refreshing: boolean
  protected _acquired: boolean
  protected _acquiredExternally: boolean
  protected _onLockLost: LockLostCallback
  constructor (options?: LockOptions)
  get identifier (): string
  get isAcquired (): boolean
  /** Beyond redis-semaphore: aborted with the LostLockError when this lock is found lost. */
  get signal (): AbortSignal
  stopRefresh (): void
  acquire (abortSignal?: AbortSignal): Promise<void>
  tryAcquire (abortSignal?: AbortSignal): Promise<boolean>
  release (): Promise<void>
}

export declare class Mutex extends Lock {
  protected _kind: string
  protected _key: string
  protected _client: RedisClient
  constructor (client: RedisClient, key: string, options?: LockOptions)
}

export declare class Semaphore extends Mutex {
  protected _kind: string
  protected _limit: number
  constructor (client: RedisClient, key: string, limit: number, options?: LockOptions)
}

export declare class MultiSemaphore extends Semaphore {
  protected _kind: string
  protected _permits: number
  constructor (client: RedisClient, key: string, limit: number, permits: number, options?: LockOptions)
}
export declare class RedlockMutex extends Lock {
  protected _kind: string
  protected _key: string
  protected _clients: RedisClient[]
  constructor (clients: RedisClient[], key: string, options?: LockOptions)
}

export declare class RedlockSemaphore extends RedlockMutex {
  protected _kind: string
  protected _limit: number
  constructor (clients: RedisClient[], key: string, limit: number, options?: LockOptions)
}

export declare class RedlockMultiSemaphore extends RedlockSemaphore {
  protected _kind: string
  protected _permits: number
  constructor (clients: RedisClient[], key: string, limit: number, permits: number, options?: LockOptions)
}

export {}
