'use strict'

/**
 * The lease keeper's JavaScript side (the renewals themselves run in Rust,
 * src/keeper.rs, on the tokio thread).
 *
 * While this environment keeps at least one lease, an unref'd interval
 * calls `keeperPoll` every POLL_MS: that call is the heartbeat that proves
 * the event loop is alive (a lock whose loop stalls past its
 * `maxEventLoopLagMs` stops being renewed) and collects the leases lost
 * since the last call, whose owners are then told (`onLost`), and the
 * renewals made, told to the `redislock-rs:renewal` channel. Nothing here
 * keeps the process alive, and a lock object collected while held stops
 * being renewed (its key expires by its TTL).
 *
 * A loss can be reported before its hold is watched: the keeper starts at
 * the grant, and JavaScript watches the hold only when the acquire's
 * completion runs (later, if the loop was blocked meanwhile). Such a loss is
 * kept aside (`early`) and delivered by `watch()`; one never watched (an
 * acquire aborted as it was granted) is forgotten after EARLY_MS.
 */

const { inspect } = require('util')
const native = require('../native/loader')
const trace = require('./trace')

const POLL_MS = 50
const EARLY_MS = 60000
const REASONS = [undefined, 'expired', 'taken', 'renewal-failed', 'max-hold', 'event-loop-stalled']

let env = null
let timer = null
// hold id -> { lock: WeakRef, onLost(reason) }
const kept = new Map()
// hold id -> { reason, at }: lost before it was watched.
const early = new Map()
const dropped = new FinalizationRegistry(({ hold, endpoint, key, token }) => {
  if (!kept.has(hold)) return
  kept.delete(hold)
  try { native.keeperDrop(endpoint, key, token) } catch (_) {}
  idle()
})

/** This environment's keeper id (made on first use). */
function envId () {
  if (env === null) env = native.keeperEnv()
  return env
}

/** Ids 1, 2, … (0 means "none" natively), wrapping below 2^32. */
function counter () {
  let next = 1
  return function () {
    const id = next
    next = next >= 0xfffffff0 ? 1 : next + 1
    return id
  }
}

/** A fresh hold id, for one acquisition. */
const holdId = counter()

/** A fresh id under which an acquire can be cancelled (`cancel`). */
const cancelId = counter()

function cancel (id) {
  native.lockxCancel(envId(), id)
}

/** Beats the heart, and tells the owners of the holds reported lost. */
function poll () {
  let lost
  try {
    lost = native.keeperPoll(envId())
  } catch (_) {
    return
  }
  const at = performance.now()
  for (let i = 0; i + 1 < lost.length; i += 2) {
    if (lost[i + 1] === 0) {
      // Renewed (not lost): told to the `redislock-rs:renewal` channel.
      const entry = kept.get(lost[i])
      if (entry !== undefined) trace.renewed(entry.key)
      continue
    }
    const reason = REASONS[lost[i + 1]] || 'renewal-failed'
    const entry = kept.get(lost[i])
    if (entry === undefined) {
      early.set(lost[i], { reason, at })
      continue
    }
    kept.delete(lost[i])
    dropped.unregister(entry)
    tell(entry, reason)
  }
  if (early.size > 0) {
    for (const [hold, e] of early) {
      if (at - e.at > EARLY_MS) early.delete(hold)
    }
  }
}

function tell (entry, reason) {
  try {
    entry.onLost(reason)
  } catch (_) {}
}

function idle () {
  if (kept.size === 0 && timer !== null) {
    clearInterval(timer)
    timer = null
  }
}

/**
 * Starts watching hold `hold` of `lock` (kept natively since its acquire):
 * `onLost(reason)` runs once if the keeper reports it lost. `where`
 * ({ endpoint, key, token }) lets a lock object collected while held stop
 * its renewals; null when the hold outlives the object (Redisson's, which
 * belong to the client id).
 */
function watch (hold, lock, where, onLost) {
  const previous = kept.get(hold)
  if (previous !== undefined) dropped.unregister(previous)
  const entry = { onLost, key: where !== null ? where.key : null }
  kept.set(hold, entry)
  if (where !== null) dropped.register(lock, { hold, ...where }, entry)
  // The first poll also collects what was lost before there was a timer.
  if (timer === null) poll()
  const before = early.get(hold)
  if (before !== undefined) {
    early.delete(hold)
    if (kept.get(hold) === entry) {
      kept.delete(hold)
      dropped.unregister(entry)
      tell(entry, before.reason)
    }
  }
  if (kept.size > 0 && timer === null) {
    timer = setInterval(tick, POLL_MS)
    timer.unref()
  }
}

function tick () {
  poll()
  idle()
}

/** Stops watching `hold` (released, extended into a loss, or reported). */
function unwatch (hold) {
  const entry = kept.get(hold)
  if (entry === undefined) return
  kept.delete(hold)
  dropped.unregister(entry)
  idle()
}

function msOption (o, name, min) {
  const v = o[name]
  if (v === undefined || v === null) return null
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new RangeError(`autoExtend.${name} must be an integer number of milliseconds ≥ ${min}; got ${inspect(v, { breakLength: Infinity, maxStringLength: 200, depth: 0 })}`)
  }
  return v
}

/**
 * createLock's `autoExtend` option, checked: null when off, else
 * { maxHoldMs, maxEventLoopLagMs } (null: the default).
 */
function autoExtendOf (options) {
  const ae = options.autoExtend
  if (ae === undefined || ae === null || ae === false) return null
  if (ae === true) return { maxHoldMs: null, maxEventLoopLagMs: null }
  if (typeof ae === 'object') {
    return { maxHoldMs: msOption(ae, 'maxHoldMs', 1), maxEventLoopLagMs: msOption(ae, 'maxEventLoopLagMs', 200) }
  }
  throw new TypeError(`createLock option autoExtend must be true, false or { maxHoldMs, maxEventLoopLagMs }; got ${inspect(ae, { breakLength: Infinity, maxStringLength: 200, depth: 0 })}`)
}

/**
 * The keeper's one policy for every face: how long the event loop may go
 * without answering before a kept lease of `leaseMs` stops being renewed
 * (a stalled loop keeps its lock; a wedged process loses it): max(30 s,
 * 3 leases).
 */
function lagBound (leaseMs) {
  return Math.max(30000, 3 * leaseMs)
}

/** The event-loop lag a kept lease of `leaseMs` allows (0: not kept): the option, else the lag bound. */
function maxLagMs (autoExtend, leaseMs) {
  if (autoExtend === null) return 0
  return autoExtend.maxEventLoopLagMs || lagBound(leaseMs)
}

module.exports = { envId, holdId, cancelId, cancel, watch, unwatch, autoExtendOf, maxLagMs, lagBound, REASONS }
