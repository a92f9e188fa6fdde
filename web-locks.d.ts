/**
 * redislock-rs/web-locks: the W3C Web Locks API (`navigator.locks`) over
 * Redis, fleet-wide. The shapes are lib.dom's `LockManager`, `Lock`,
 * `LockOptions`, `LockInfo` and `LockManagerSnapshot`.
 */

export type LockMode = 'exclusive' | 'shared'

export interface LockOptions {
  mode?: LockMode
  ifAvailable?: boolean
  steal?: boolean
  signal?: AbortSignal
}

export interface LockInfo {
  name?: string
  mode?: LockMode
  clientId?: string
}

export interface LockManagerSnapshot {
  held?: LockInfo[]
  pending?: LockInfo[]
}

export type LockGrantedCallback<T> = (lock: Lock | null) => T

/** A granted request. */
export declare class Lock {
  private constructor ()
  readonly name: string
  readonly mode: LockMode
  /**
   * Beyond the browser's: aborted with an `AbortError` DOMException when
   * the lock is lost while held (stolen, deleted, or not renewed in time).
   */
  readonly signal: AbortSignal
}

export interface LockManagerOptions {
  /** Every key this manager writes starts with it (after the client's own key prefix). Default 'weblocks:'. */
  prefix?: string
  /** How long a lock outlives a process that died holding it (ms). Default 30000. */
  lease?: number
  /** What `query()` shows for this manager's requests. Default: a random UUID. */
  clientId?: string
}

export declare class LockManager {
  /**
   * `client`: a node-redis, ioredis, iovalkey or Valkey GLIDE client, a
   * Cluster or Sentinel client, a `redis://` URL or an options object.
   */
  constructor (client: unknown, options?: LockManagerOptions)
  request<T> (name: string, callback: LockGrantedCallback<T>): Promise<Awaited<T>>
  request<T> (name: string, options: LockOptions, callback: LockGrantedCallback<T>): Promise<Awaited<T>>
  query (): Promise<LockManagerSnapshot>
}

declare const _default: { LockManager: typeof LockManager, Lock: typeof Lock }
export default _default
