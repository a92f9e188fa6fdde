// Types of redislock-rs/redisson: node-redisson 1.0.4's public types, plus
// `RedissonLockError` and `{ redis: { client } }`.

export type RedissonTime = number | bigint
export type RLockWaitTime = RedissonTime | false
export type RLockLeaseTime = RedissonTime | true
export type LockClientId = string

export declare class TimeUnit {
  readonly baseMs: RedissonTime
  private readonly _baseMs
  constructor (baseMs: RedissonTime)
  static MILLISECONDS: TimeUnit
  static SECONDS: TimeUnit
  static MINUTES: TimeUnit
  static HOURS: TimeUnit
  static DAYS: TimeUnit
  /** The current time in ms, as a bigint. */
  static now (): bigint
  toMillis (d: RedissonTime): bigint
  toSeconds (d: RedissonTime): bigint
  toHours (d: RedissonTime): bigint
  toDays (d: RedissonTime): bigint
}

export interface IRLock {
  get clientId (): LockClientId
  get name (): string
  tryLock (waitTime: RLockWaitTime, leaseTime: RLockLeaseTime): Promise<boolean>
  tryLock (waitTime: RLockWaitTime, leaseTime: RLockLeaseTime, unit: TimeUnit): Promise<boolean>
  lock (): Promise<void>
  lock (leaseTime: RLockLeaseTime): Promise<void>
  lock (leaseTime: RLockLeaseTime, unit: TimeUnit): Promise<void>
  unlock (): Promise<void>
  forceUnlock (): Promise<boolean>
  isLocked (): Promise<boolean>
  /**
   * Beyond node-redisson: aborted with a `LockLostError` when this object's
   * current (or last) hold is lost, never by a clean unlock; `null` before
   * the first hold.
   */
  readonly signal: AbortSignal | null
}

/** ioredis connection options (the subset redislock-rs reads). */
export interface RedisOptions {
  host?: string
  port?: number
  path?: string
  db?: number
  username?: string
  password?: string
  keyPrefix?: string
  connectTimeout?: number
  commandTimeout?: number
  tls?: object | boolean
  [option: string]: unknown
}

export interface IRedissonConfig {
  /**
   * `{ options }`: ioredis options, as node-redisson. `{ client }`: any
   * client, URL or options object `createLock` accepts (redislock-rs only).
   * `{ clusters, options }`: a Redis Cluster, as node-redisson (seed nodes;
   * `options` give credentials and TLS for every node; pub/sub events only).
   */
  redis: { options: RedisOptions } | { client: unknown } | { clusters: ReadonlyArray<string | number | { host?: string, port?: number }>, options?: RedisOptions }
  eventAdapter?: 'streams' | 'pubsub'
  /**
   * Lease of locks taken without a lease time, renewed every third of it by
   * the watchdog until unlock. Milliseconds; default 30000. A number is
   * accepted too (node-redisson takes only a bigint).
   */
  lockWatchdogTimeout?: bigint | number
  /**
   * Beyond node-redisson (Redisson's `checkLockSyncedSlaves`): a tryLock
   * holds only once `WAIT replicas replicaTimeout` confirms that many
   * replicas have the write; otherwise that hold is given back and the call
   * rejects with a `RedissonLockError` (`code` `'ERR_NOT_REPLICATED'`).
   * More replicas than the primary has are refused before any write.
   */
  replicas?: number
  /** How long to wait for the replicas, in ms; default 1000. */
  replicaTimeout?: number
  /**
   * Beyond node-redisson (Redisson's `fairLockWaitTimeout`): how long a
   * fair lock waiter that stopped renewing its place (a dead process) holds
   * the queue up, in ms; default 5000. Live waiters renew it while they
   * wait.
   */
  fairLockWaitTimeout?: bigint | number
}

/**
 * Beyond node-redisson: Java Redisson's `RReadWriteLock`. Both locks are
 * RLocks on one hash (Java Redisson's layout) and share a clientId: a
 * writer may also take the read lock.
 */
export interface IRReadWriteLock {
  readonly name: string
  /** Shared with other readers; excluded by another client's write lock. */
  readLock (): IRLock
  /** Held by one client, while no other client reads. */
  writeLock (): IRLock
}

export interface IRedissonClient {
  /** The client passed as `{ redis: { client } }`; throws otherwise. */
  get redis (): unknown
  getLock (name: string): IRLock
  getLock (name: string, clientId: string): IRLock
  quit (): Promise<void>
}

/**
 * Beyond node-redisson: Java Redisson's RSemaphore, on its data layout (the
 * count at the name; releases published on `redisson_sc:{name}`).
 */
export interface RSemaphore {
  readonly name: string
  /**
   * Sets the number of permits if none is set yet; `true` when set. With
   * `ttl` (in `unit`, default ms; at least 1 ms) the count expires after it.
   */
  trySetPermits (permits: number, ttl?: RedissonTime | null, unit?: TimeUnit): Promise<boolean>
  /** Takes `permits` (default 1), waiting as long as it takes. */
  acquire (permits?: number): Promise<void>
  /** Takes `permits` if free, waiting at most `waitTime` (none: one attempt). */
  tryAcquire (permits?: number, waitTime?: RedissonTime, unit?: TimeUnit): Promise<boolean>
  release (permits?: number): Promise<void>
  /** Gives `permits` (default 1) back only if the count exists; `true` when given back. */
  releaseIfExists (permits?: number): Promise<boolean>
  availablePermits (): Promise<number>
  /** Adds permits (negative: removes them). */
  addPermits (permits: number): Promise<void>
  /** Takes every free permit; how many there were. */
  drainPermits (): Promise<number>
}

/** A permit id: 32 lowercase hexadecimal digits (16 bytes). */
export type PermitId = string

/**
 * Beyond node-redisson: Java Redisson's RPermitExpirableSemaphore, on its
 * data layout (the free count at the name, held permits in `{name}:timeout`
 * scored by their expiry). A lease of `undefined`, `null` or -1: none.
 */
export interface RPermitExpirableSemaphore {
  readonly name: string
  trySetPermits (permits: number): Promise<boolean>
  /** Takes a permit, waiting as long as it takes; resolves to its id. */
  acquire (leaseTime?: RedissonTime | null, unit?: TimeUnit): Promise<PermitId>
  /** Takes a permit, waiting at most `waitTime` (none: one attempt); its id, or `null`. */
  tryAcquire (waitTime?: RedissonTime | null, leaseTime?: RedissonTime | null, unit?: TimeUnit): Promise<PermitId | null>
  tryAcquire (waitTime: RedissonTime, unit: TimeUnit): Promise<PermitId | null>
  /** Rejects (`RedissonLockError`) when the permit was released already, expired or never existed. */
  release (permitId: PermitId): Promise<void>
  tryRelease (permitId: PermitId): Promise<boolean>
  updateLeaseTime (permitId: PermitId, leaseTime: RedissonTime, unit?: TimeUnit): Promise<boolean>
  availablePermits (): Promise<number>
  /** All the permits: free plus held. */
  getPermits (): Promise<number>
  /** The permits held. */
  acquiredPermits (): Promise<number>
  /** Sets the number of all the permits; the free count moves by the difference. */
  setPermits (permits: number): Promise<void>
  /**
   * The ms left of the permit's lease (-1: no lease); rejects
   * (`RedissonLockError`) when it was released already, expired or never existed.
   */
  getLeaseTime (permitId: PermitId): Promise<number>
  addPermits (permits: number): Promise<void>
}

/**
 * Beyond node-redisson: Java Redisson's RCountDownLatch, on its data layout
 * (the count at the name; `redisson_countdownlatch__channel__{name}`).
 */
export interface RCountDownLatch {
  readonly name: string
  trySetCount (count: number): Promise<boolean>
  countDown (): Promise<void>
  getCount (): Promise<number>
  /** Waits until the count is zero, at most `waitTime` (none: forever); `true` at zero. */
  await (waitTime?: RedissonTime, unit?: TimeUnit): Promise<boolean>
}

export declare class Redisson implements IRedissonClient {
  constructor (config: IRedissonConfig)
  get redis (): unknown
  getLock (name: string, clientId?: string): IRLock
  /** Beyond node-redisson: Java Redisson's read-write lock. */
  getReadWriteLock (name: string, clientId?: string): IRReadWriteLock
  /** Beyond node-redisson: Java Redisson's fair (first come, first served) lock. */
  getFairLock (name: string, clientId?: string): IRLock
  /** Beyond node-redisson: Java Redisson's RSemaphore at `name`. */
  getSemaphore (name: string): RSemaphore
  /** Beyond node-redisson: Java Redisson's RPermitExpirableSemaphore at `name`. */
  getPermitExpirableSemaphore (name: string): RPermitExpirableSemaphore
  /** Beyond node-redisson: Java Redisson's RCountDownLatch at `name`. */
  getCountDownLatch (name: string): RCountDownLatch
  quit (): Promise<void>
}

/** Thrown by unlock() when the lock is not held by this client, and for Redis failures (`cause`). */
export declare class RedissonLockError extends Error {
  readonly lockName: string
  readonly nodeId: string
  readonly clientId: LockClientId
  constructor (message: string, lockName: string, nodeId: string, clientId: LockClientId, options?: { cause?: unknown })
}
