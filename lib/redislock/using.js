'use strict'

/**
 * Helpers around a lock's life beyond redislock 1.3.0's API: `using`
 * (acquire with autoExtend, run a routine, release) and `inspect` (what
 * Redis holds for a key, for operators).
 */

const { createLock } = require('./create')
const { start } = require('../native/bridge')
const { targetFor } = require('../common/targets')
const { LockAcquisitionError, wrapError } = require('../common/errors')

const { LockOp, nums } = require('../native/wire')

/**
 * Acquires `key` (autoExtend on unless `options.autoExtend` says
 * otherwise), runs `routine(signal)`, releases, and resolves with the
 * routine's value. The routine's own error wins (a release error becomes
 * its `cause` when it has none); if the lock was lost meanwhile, the
 * signal aborted and `using` rejects with its LockLostError even when the
 * routine returned.
 */
async function using (client, key, options, routine) {
  if (typeof options === 'function' && routine === undefined) {
    routine = options
    options = {}
  }
  if (typeof routine !== 'function') {
    throw new TypeError(`using(client, key, options, routine): routine must be a function; got ${typeof routine}`)
  }
  options = options || {}
  const { signal, ...lockOptions } = options
  if (lockOptions.autoExtend === undefined) lockOptions.autoExtend = true
  const lock = createLock(client, lockOptions)
  await lock.acquire(key, signal ? { signal } : undefined)
  const held = lock.signal
  let value
  let failure = null
  try {
    value = await routine(held)
  } catch (err) {
    failure = { err }
  }
  let releaseError = null
  try {
    await lock.release()
  } catch (err) {
    releaseError = err
  }
  if (failure !== null) {
    const err = failure.err
    if (releaseError !== null && err instanceof Error && err.cause === undefined) {
      try { err.cause = releaseError } catch (_) {}
    }
    throw err
  }
  if (held.aborted) throw held.reason
  if (releaseError !== null) throw releaseError
  return value
}

function settleInspect (_, key, outcome, err, resolve, reject, value) {
  if (err) return reject(wrapError(err, LockAcquisitionError))
  // `value`: { pttl, owner, fencing } (src/node/wire/done.rs `Inspected`).
  const ttl = value.pttl
  const out = { held: ttl !== -2, ttlMs: ttl >= 0 ? ttl : (ttl === -1 ? Infinity : 0) }
  if (out.held) out.owner = value.owner == null ? '' : value.owner
  if (value.fencing != null) out.fencingToken = value.fencing
  resolve(out)
}

/**
 * What Redis holds for `key` now: `{ held, ttlMs, owner?, fencingToken? }`
 * (`ttlMs` Infinity for a key without TTL, `owner` the holder's token,
 * `fencingToken` the last one issued for the key).
 */
function inspect (client, key) {
  if (typeof key !== 'string' || key === '') {
    return Promise.reject(new TypeError('inspect(client, key): key must be a non-empty string'))
  }
  let target
  try {
    target = targetFor(client, 'inspect')
  } catch (err) {
    return Promise.reject(err)
  }
  return start(settleInspect, null, key, function (id) {
    target.engine.lockx(target.endpoint, id, LockOp.Inspect, target.prefix + key, '', nums({}))
  }, Promise)
}

module.exports = { using, inspect }
