// Type definitions for redislock-rs, the public API of redislock 1.3.0.
// Hand-written; the generated native layer is typed in binding.d.ts.

import Bluebird = require('bluebird')

// `Symbol.asyncDispose` for projects whose `lib` predates it (as
// @types/node declares it too; the declarations merge).
declare global {
  interface SymbolConstructor {
    readonly asyncDispose: unique symbol
  }
}

/** Per-lock settings. Missing ones come from the defaults (see `setDefaults`). */
export interface LockOptions {
  /** Time to live of the lock in Redis, in ms. Default 10000. */
  timeout?: number
  /** Extra attempts after the first one fails; `-1` retries until the lock is free. Default 0. */
  retries?: number
  /** Wait between attempts, in ms. Default 50. */
  delay?: number
  /**
   * Beyond redislock: renew the lease from Rust while held, even while the
   * event loop is blocked, but only while the event loop answers the keeper
   * within `maxEventLoopLagMs` and the hold is shorter than `maxHoldMs`.
   * Losses abort `lock.signal`. Default off.
   */
  autoExtend?: boolean | AutoExtendOptions
  /** Beyond redislock: every grant gets `lock.fencingToken`, strictly increasing per key. Default off. */
  fencing?: boolean
  /** Beyond redislock: waiters wake when a holder with this option releases, not only after `delay`. Default off. */
  wakeOnRelease?: boolean
  /** Beyond redislock: a grant or extend counts only once this many replicas acknowledged it (`WAIT`). Default 0 (off). */
  replicas?: number
  /** How long to wait for the replicas' acknowledgement, in ms (keep it below `commandTimeout`). Default 1000. */
  replicaTimeout?: number
}

/** Bounds of `autoExtend`. */
export interface AutoExtendOptions {
  /** Stop renewing once the hold has lasted this long, in ms. Default: no limit. */
  maxHoldMs?: number
  /** Stop renewing when the event loop has not answered for this long, in ms (≥ 200). Default `max(30000, 3 × timeout)`. */
  maxEventLoopLagMs?: number
}

/** Options of one `acquire`, in place of (or before) the callback. */
export interface AcquireOptions {
  /** Aborting it ends the wait at once with a `LockAcquisitionError` whose `cause` is the abort reason. */
  signal?: AbortSignal
}

/** Why a held lock was lost (`LockLostError.reason`). */
export type LockLostReason = 'expired' | 'taken' | 'renewal-failed' | 'max-hold' | 'event-loop-stalled'

/** Certificate material as node's `tls` options take it. */
export type TlsMaterial = string | Uint8Array | ReadonlyArray<string | Uint8Array>

/** Node-style TLS settings for a `ConnectionOptions` object. */
export interface TlsOptions {
  /** CA bundle to trust instead of the built-in roots (PEM). */
  ca?: TlsMaterial
  /** Client certificate (PEM). */
  cert?: TlsMaterial
  /** Client private key (PEM). */
  key?: TlsMaterial
  /** Server name to verify (SNI). */
  servername?: string
  /** `false` turns certificate verification off. */
  rejectUnauthorized?: boolean
}

/** Where to connect, when no client object is at hand. `url` is applied first; the other fields override it. */
export interface ConnectionOptions {
  /**
   * A `redis://` or `rediss://` URL, or a Unix socket URL:
   * `unix:///path/to/redis.sock?db=N&pass=...&user=...` (also `redis+unix://`).
   */
  url?: string
  host?: string
  port?: number
  /** A Unix socket path, in place of `host` and `port`. */
  path?: string
  db?: number
  /** Alias of `db`, as node_redis v4+ spells it. */
  database?: number
  username?: string
  password?: string
  /** `true` (or TLS settings) connects over TLS. */
  tls?: boolean | TlsOptions
  /** Bound on connecting, in ms (default 2000). */
  connectTimeout?: number
  /** Bound on one command's reply, in ms (default 2000). */
  commandTimeout?: number
  /** Put in front of every lock key in Redis, as ioredis `keyPrefix` does. */
  keyPrefix?: string
  /** Same as `keyPrefix`, as node_redis v3 spells it. */
  prefix?: string
  /** Sentinel: the sentinels (`'host:port'` or `{ host, port }`); locks go to the primary they name as `name`, followed across failovers. */
  sentinels?: ReadonlyArray<string | { host?: string, port?: number }>
  /** Sentinel: the primary's name. */
  name?: string
  sentinelUsername?: string
  sentinelPassword?: string
  /** A Redis Cluster's seed nodes (`'host:port'`, URLs, ports or `{ host, port }`); the other fields apply to every node. */
  cluster?: ReadonlyArray<string | number | { host?: string, port?: number } | { url: string }>
}

/**
 * A Redis client object: node_redis v3 (`send_command`), node_redis v4+ or
 * ioredis (`sendCommand`). Only its connection settings (server or socket
 * path, database, credentials, TLS) and key prefix (node_redis v3 `prefix`,
 * ioredis `keyPrefix`) are read; redislock-rs talks to the same server over
 * its own shared connection. Sentinel and Cluster clients are refused.
 */
export type RedisClientLike =
  | { sendCommand(...args: any[]): unknown }
  | { send_command(...args: any[]): unknown }

/** What `createLock` accepts: a client object, a `redis://`/`rediss://`/`unix://` URL, or connection options. */
export type RedisClient = RedisClientLike | string | ConnectionOptions

/** A node-style callback: `null` on success, the lock error otherwise. */
export type LockCallback = (err: Error | null) => void

/** A lock on one key at a time, made by `createLock`. */
export interface Lock {
  /** Random token (UUID) identifying this lock's holder in Redis. */
  readonly _id: string
  /** Whether the lock is currently held. */
  readonly _locked: boolean
  /** The key held, or `null` while not held. */
  readonly _key: string | null
  /** Time to live in ms. */
  timeout: number
  /** Extra attempts after the first one; `-1` means until free. */
  retries: number
  /** Wait between attempts in ms. */
  delay: number

  /** Takes the lock on `key`. Rejects with `LockAcquisitionError`. */
  acquire(key: string): Bluebird<void>
  /** Takes the lock on `key`, calling back with `null` or a `LockAcquisitionError`. */
  acquire(key: string, callback: LockCallback): Bluebird<void>
  /** Takes the lock on `key`; `options.signal` can end the wait. */
  acquire(key: string, options: AcquireOptions, callback?: LockCallback): Bluebird<void>

  /** Exactly one attempt: `true` when taken, `false` when held elsewhere. */
  tryAcquire(key: string, options?: AcquireOptions): Bluebird<boolean>

  /**
   * Aborted with a `LockLostError` when the current (or last) hold is lost,
   * never by a clean release; a fresh one per acquisition, `null` before the first.
   */
  readonly signal: AbortSignal | null
  /** The current hold's fencing token (`fencing: true`), else `null`. */
  readonly fencingToken: bigint | null
  /** How long the lease is known to run, in ms (never negative; 0 when not held). */
  remainingMs(): number
  /** Releases the lock if held: `await using lock = …`. */
  [Symbol.asyncDispose](): PromiseLike<void>

  /** Releases the lock. Rejects with `LockReleaseError` (also when it had expired). */
  release(): Bluebird<void>
  /** Releases the lock, calling back with `null` or a `LockReleaseError`. */
  release(callback: LockCallback): Bluebird<void>

  /** Sets the lock's time to live to `time` ms. Rejects with `LockExtendError`. */
  extend(time: number): Bluebird<void>
  /** Sets the lock's time to live to `time` ms, calling back with `null` or a `LockExtendError`. */
  extend(time: number, callback: LockCallback): Bluebird<void>
}

/** Settings of a lock on several independent servers (Redlock). */
export interface QuorumLockOptions {
  timeout?: number
  retries?: number
  delay?: number
  /** Bound on each server's answer per step, in ms. Default `max(50, timeout / 100)`, never above a server's `commandTimeout`. */
  serverTimeout?: number
  /** Up to this much random extra wait between attempts, in ms. Default 20. */
  retryJitter?: number
  /**
   * Renew the lease on a majority every `timeout / 3` ms from the tokio
   * thread while held (bounded as for one server). A majority that stops
   * confirming within the lease's validity loses the lock (`signal`).
   */
  autoExtend?: boolean | AutoExtendOptions
  /**
   * Releases announce themselves on every server; a waiter subscribes on
   * every server and is woken by the first announcement (pauses keep their
   * schedule, so the wait stays within `retries × (delay + retryJitter)`).
   */
  wakeOnRelease?: boolean
}

/** What one server did in a quorum operation (`err.servers`). */
export interface ServerOutcome {
  /** `host:port/db` (or `unix:path/db`). */
  server: string
  /**
   * `unheard`: an acquire settled on a majority before this server answered
   * (its command was sent; seen only when no validity was left).
   */
  outcome: 'acquired' | 'held' | 'released' | 'extended' | 'not-ours' | 'timeout' | 'unreachable' | 'error' | 'unheard'
  /** The underlying error's message, for `unreachable` and `error`. */
  error?: string
}

/** A lock on a majority of several independent Redis servers (Redlock), made by `createLock([...])`. */
export interface QuorumLock {
  /** Random token (UUID) written on every server. */
  readonly _id: string
  readonly _locked: boolean
  readonly _key: string | null
  timeout: number
  retries: number
  delay: number
  serverTimeout: number
  retryJitter: number
  /** Takes the lock on a majority within a positive validity. Rejects with `LockAcquisitionError` (with `servers`). */
  acquire(key: string, callback?: LockCallback): Bluebird<void>
  /** As above; `options.signal` (an AbortSignal) ends the wait at once, rejecting with a `LockAcquisitionError` whose `cause` is the abort reason. */
  acquire(key: string, options: AcquireOptions, callback?: LockCallback): Bluebird<void>
  /** Exactly one attempt: `true` when granted, `false` when other owners hold it on too many servers for a majority; rejects for anything else. */
  tryAcquire(key: string, options?: AcquireOptions): Bluebird<boolean>
  /** Releases it everywhere; rejects with `LockReleaseError` when fewer than a majority confirmed. */
  release(callback?: LockCallback): Bluebird<void>
  /** Extends it on a majority within the new validity; otherwise the lock is lost and released (`LockExtendError`). */
  extend(time: number, callback?: LockCallback): Bluebird<void>
  /** How long the lock is valid for, in ms (never negative; 0 when not held or lost); with `autoExtend`, from the last renewal a majority confirmed. */
  validityMs(): number
  /** Aborted with a `LockLostError` when the current (or last) hold is lost; `null` before the first acquire. */
  readonly signal: AbortSignal | null
  /** Releases the lock if it is held (`await using lock = createLock([...])`). */
  [Symbol.asyncDispose](): PromiseLike<void>
}

/** Options for the optional `cause` of a lock error. */
export interface LockErrorOptions {
  cause?: unknown
}

/** Raised when a lock could not be acquired (held elsewhere, already held, bad key, Redis failure). */
export declare class LockAcquisitionError extends Error {
  constructor(message?: string, options?: LockErrorOptions)
  name: 'LockAcquisitionError'
  /** The underlying Redis or connection error, when there was one. */
  cause?: unknown
  /** A quorum lock's failure: what every server did. */
  servers?: ServerOutcome[]
}

/** Raised when a lock could not be released (not held, had expired, Redis failure). */
export declare class LockReleaseError extends Error {
  constructor(message?: string, options?: LockErrorOptions)
  name: 'LockReleaseError'
  /** The underlying Redis or connection error, when there was one. */
  cause?: unknown
  /** A quorum lock's failure: what every server did. */
  servers?: ServerOutcome[]
}

/** Raised when a lock could not be extended (bad time, not held, had expired, Redis failure). */
export declare class LockExtendError extends Error {
  constructor(message?: string, options?: LockErrorOptions)
  name: 'LockExtendError'
  /** The underlying Redis or connection error, when there was one. */
  cause?: unknown
  /** A quorum lock's failure: what every server did. */
  servers?: ServerOutcome[]
}

/** Raised (as `lock.signal.reason`) when a held lock was lost. */
export declare class LockLostError extends Error {
  constructor(message: string, reason: LockLostReason, key: string, options?: LockErrorOptions)
  name: 'LockLostError'
  readonly reason: LockLostReason
  /** The lock's key. */
  readonly key: string
  cause?: unknown
}

/** What Redis holds for a key (`inspect`). */
export interface LockInspection {
  held: boolean
  /** Time to live left, in ms (`Infinity` without TTL, 0 when not held). */
  ttlMs: number
  /** The holder's token (`lock._id`), when held. */
  owner?: string
  /** The last fencing token issued for the key, when one was. */
  fencingToken?: bigint
}

/** Options of `using`: the lock's (autoExtend on by default) and the acquire's. */
export interface UsingOptions extends LockOptions, AcquireOptions {}

/**
 * Acquires `key` (autoExtend on by default), runs `routine(signal)`, releases,
 * and resolves with its value; rejects with the `LockLostError` if the lock
 * was lost meanwhile.
 */
export declare function using<T>(client: RedisClient, key: string, options: UsingOptions | null | undefined,
  routine: (signal: AbortSignal) => T | PromiseLike<T>): Promise<T>
export declare function using<T>(client: RedisClient, key: string,
  routine: (signal: AbortSignal) => T | PromiseLike<T>): Promise<T>

/** What Redis holds for `key` now, for operators. */
export declare function inspect(client: RedisClient, key: string): Promise<LockInspection>

/**
 * Marks `client` so that every face sends its commands through it (its
 * `call`, `sendCommand`, `send_command` or a method named after the
 * command) instead of opening a connection of its own to the client's
 * server: for wrappers and in-memory clients with no server behind them
 * (ioredis-mock is recognised without it). Returns the client.
 */
export declare function viaClient<T extends object>(client: T): T

/** A new, unlocked Lock using `client` (a Redis client, URL or connection options). */
export declare function createLock(client: RedisClient, options?: LockOptions): Lock
/** A new, unlocked lock on a majority of these independent servers (Redlock). */
export declare function createLock(clients: readonly RedisClient[], options?: QuorumLockOptions): QuorumLock

/** Sets the defaults for locks created afterwards; `null`/`undefined` fields are ignored. */
export declare function setDefaults(options?: LockOptions | null): void

/** The locks this process currently holds, in acquisition order. */
export declare function getAcquiredLocks(): Lock[]
