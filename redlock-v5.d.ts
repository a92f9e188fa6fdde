// Types of redislock-rs/redlock/v5: node-redlock 5 and
// @sesamecare-oss/redlock 1.4.0 as their .d.ts declare them, with every
// client kind createLock takes (theirs take ioredis clients).

import { EventEmitter } from 'events'
import type { RedisClient } from './index'

/** A Redis server: a node_redis, node-redis, ioredis or iovalkey client, a URL or an options object. */
type Client = RedisClient

export type ClientExecutionResult =
  | { client: Client, vote: 'for', value: number }
  | { client: Client, vote: 'against', error: Error }

export type ExecutionStats = {
  readonly membershipSize: number
  readonly quorumSize: number
  readonly votesFor: Set<Client>
  readonly votesAgainst: Map<Client, Error>
}

export type ExecutionResult = {
  attempts: ReadonlyArray<Promise<ExecutionStats>>
  start: number
}

export interface Settings {
  readonly driftFactor?: number
  readonly retryCount?: number
  readonly retryDelay?: number
  readonly retryJitter?: number
  readonly automaticExtensionThreshold?: number
  /** @sesamecare-oss/redlock: lock on this database of every server (default: each client's own). */
  readonly db?: number
  /**
   * Beyond node-redlock 5: a release announces itself on each resource's
   * channel and a waiting acquire() tries again at once (false). Not with a
   * releaseScript transform.
   */
  readonly wakeOnRelease?: boolean
}

export interface Scripts {
  readonly acquireScript?: string | ((script: string) => string)
  readonly extendScript?: string | ((script: string) => string)
  readonly releaseScript?: string | ((script: string) => string)
}

export declare class ResourceLockedError extends Error {
  readonly message: string
  constructor (message: string)
}

export declare class ExecutionError extends Error {
  readonly message: string
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>
  constructor (message: string, attempts: ReadonlyArray<Promise<ExecutionStats>>)
}

export declare class Lock {
  readonly redlock: Redlock
  readonly resources: string[]
  readonly value: string
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>
  expiration: number
  readonly settings?: Partial<Settings> | undefined
  /** Beyond node-redlock 5: aborted with a LockLostError when a release or extend finds the lock lost. */
  readonly signal: AbortSignal
  constructor (redlock: Redlock, resources: string[], value: string, attempts: ReadonlyArray<Promise<ExecutionStats>>, expiration: number, settings?: Partial<Settings> | undefined)
  release (): Promise<ExecutionResult>
  extend (duration: number): Promise<Lock>
}

export type RedlockAbortSignal = AbortSignal & { error?: Error }

export interface RedlockUsingContext {
  lock: Lock
  extensions: number
}

export declare class Redlock extends EventEmitter {
  readonly clients: Set<Client>
  readonly settings: Required<Omit<Settings, 'db'>> & { readonly db?: number }
  readonly scripts: {
    readonly acquireScript: { value: string, hash: string }
    readonly extendScript: { value: string, hash: string }
    readonly releaseScript: { value: string, hash: string }
  }
  constructor (clients: Iterable<Client>, settings?: Settings, scripts?: Scripts)
  quit (): Promise<void>
  acquire (resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>
  release (lock: Lock, settings?: Partial<Settings>): Promise<ExecutionResult>
  extend (existing: Lock, duration: number, settings?: Partial<Settings>): Promise<Lock>
  using<T> (resources: string[], duration: number, settings: Partial<Settings>, routine?: (signal: RedlockAbortSignal, context: RedlockUsingContext) => Promise<T>): Promise<T>
  using<T> (resources: string[], duration: number, routine: (signal: RedlockAbortSignal, context: RedlockUsingContext) => Promise<T>): Promise<T>
}

export default Redlock
