'use strict'

/**
 * What the locks are doing, for the tools Node teams already run: every
 * face publishes on `node:diagnostics_channel` (the stable interface is the
 * docs/observability.md):
 * - TracingChannels `redislock-rs:acquire`, `redislock-rs:release` and
 *   `redislock-rs:extend`: start and end around the call, then asyncStart
 *   and asyncEnd (error first, on a failure) when its promise settles, as
 *   `tracingChannel.tracePromise` publishes them, also for the Bluebird
 *   promises of the redislock and redlock 4 faces. Close spans on
 *   asyncEnd. The context says which face and lock kind, the keys, the
 *   servers, and when it settles the outcome, how long it took, the
 *   attempts (of every acquire, granted or not) and fencing token where
 *   known, and the error's class.
 * - the plain channel `redislock-rs:lost`, once per lost lock, with the
 *   face, the keys, the reason and the LockLostError;
 * - the plain channel `redislock-rs:renewal`, once per lease renewed by
 *   the keeper, with its Redis key.
 * With no subscriber nothing is built: a traced method first reads
 * `hasSubscribers`, and otherwise calls the face's own method at once.
 */

const dc = require('node:diagnostics_channel')

const channels = {
  acquire: dc.tracingChannel('redislock-rs:acquire'),
  release: dc.tracingChannel('redislock-rs:release'),
  extend: dc.tracingChannel('redislock-rs:extend')
}
const lostChannel = dc.channel('redislock-rs:lost')
// The attempts of a lock's last granted acquire, noted by its face's
// settle (which runs before the traced promise's reactions) only while
// someone listens.
const granted = new WeakMap()
const renewalChannel = dc.channel('redislock-rs:renewal')

/**
 * Traces the methods of `proto` named in `specs` on the channel of their
 * `op`: `{ op, keys(self, args), outcome(result, self, ctx), after?(self,
 * ctx) }`; `about(self)` gives the face's `{ kind, servers }`.
 */
function instrument (proto, face, about, specs) {
  for (const name of Object.keys(specs)) {
    const spec = specs[name]
    const original = proto[name]
    const tc = channels[spec.op]
    const traced = {
      [name]: function () {
        if (!tc.hasSubscribers) return original.apply(this, arguments)
        const { kind, servers } = about(this)
        const ctx = { face, kind, op: spec.op, keys: spec.keys(this, arguments), servers }
        return observe(tc, ctx, spec, original, this, arguments)
      }
    }[name]
    Object.defineProperty(traced, 'length', { value: original.length })
    proto[name] = traced
  }
}

function observe (tc, ctx, spec, original, self, args) {
  const started = performance.now()
  tc.start.publish(ctx)
  let p
  try {
    p = original.apply(self, args)
  } catch (err) {
    failed(ctx, started, err)
    tc.error.publish(ctx)
    tc.end.publish(ctx)
    throw err
  }
  tc.end.publish(ctx)
  const ok = (result) => {
    ctx.result = result
    ctx.durationMs = performance.now() - started
    ctx.outcome = spec.outcome(result, self, ctx)
    const attempts = granted.get(self)
    if (attempts !== undefined && spec.op === 'acquire') {
      granted.delete(self)
      ctx.attempts = attempts
    }
    if (spec.after !== undefined) spec.after(self, ctx)
    tc.asyncStart.publish(ctx)
    tc.asyncEnd.publish(ctx)
  }
  const bad = (err) => {
    failed(ctx, started, err)
    tc.error.publish(ctx)
    tc.asyncStart.publish(ctx)
    tc.asyncEnd.publish(ctx)
  }
  // Observed, not chained: the caller's promise is returned as it was.
  if (p !== null && (typeof p === 'object' || typeof p === 'function') && typeof p.then === 'function') p.then(ok, bad)
  else ok(p)
  return p
}

function failed (ctx, started, err) {
  ctx.error = err
  ctx.durationMs = performance.now() - started
  ctx.outcome = outcomeOf(err)
  ctx.errorClass = err !== null && typeof err === 'object' && err.constructor ? err.constructor.name : typeof err
  if (err !== null && typeof err === 'object' && typeof err.attempts === 'number') ctx.attempts = err.attempts
}

/** What a rejection says: 'aborted', 'timed-out' (a wait that ended without the lock) or 'failed'. */
function outcomeOf (err) {
  if (err === null || typeof err !== 'object') return 'failed'
  const name = err.name
  const message = String(err.message)
  if (name === 'AbortError' || (err.cause && err.cause.name === 'AbortError') || / was aborted$/.test(message)) return 'aborted'
  if (/^(Could not acquire lock|Exceeded \d+ attempts to lock|Acquire [a-z-]+ .* timeout$)/.test(message) ||
    message === 'The operation was unable to achieve a quorum during its retry window.') return 'timed-out'
  return 'failed'
}

/**
 * Notes that `lock`'s acquire was granted after `n` attempts, for its
 * trace context, if anyone listens.
 */
function attempts (lock, n) {
  if (channels.acquire.hasSubscribers && typeof n === 'number') granted.set(lock, n)
}

/** Publishes a lost lock on `redislock-rs:lost`, if anyone listens. */
function lost (face, keys, reason, error) {
  if (lostChannel.hasSubscribers) lostChannel.publish({ face, keys, reason, error })
}

/**
 * Publishes a renewal made by the lease keeper on `redislock-rs:renewal`
 * (`key`: the Redis key, null for the Redisson face's watchdog), if anyone
 * listens. Renewals are collected with the keeper's heartbeat, every 50 ms.
 */
function renewed (key) {
  if (renewalChannel.hasSubscribers) renewalChannel.publish({ key })
}

module.exports = { instrument, attempts, lost, renewed }
