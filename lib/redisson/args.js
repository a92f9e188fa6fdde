'use strict'

/**
 * The Redisson face's naming rules and argument checks, shared by its
 * objects (rlock.js, sync-base.js): node-redisson's and Java Redisson's
 * names for the keys and channels beside an object's key, a value as an
 * error message shows it, `TimeUnit` checks and times in ms.
 */

const { TimeUnit } = require('./timeunit')

const MAX_MS = BigInt(Number.MAX_SAFE_INTEGER)

/** node-redisson's `prefixName`: braces unless the name starts with one. */
function nodePrefixName (prefix, name) {
  return `${prefix}:${name.startsWith('{') ? name : `{${name}}`}`
}

/** Java Redisson's `RedissonObject.prefixName`: braces unless the name has one anywhere. */
function prefixName (prefix, name) {
  return `${prefix}:${name.includes('{') ? name : `{${name}}`}`
}

/** Java Redisson's `RedissonObject.suffixName`. */
function suffixName (name, suffix) {
  return name.includes('{') ? `${name}:${suffix}` : `{${name}}:${suffix}`
}

/** A value as an error message shows it. */
function describe (v) {
  if (typeof v === 'bigint') return `${v}n`
  if (typeof v === 'string') return JSON.stringify(v)
  if (v === null || typeof v !== 'object') return String(v)
  return Object.prototype.toString.call(v)
}

function isUnit (u) {
  return u instanceof TimeUnit || (u !== null && typeof u === 'object' && typeof u.toMillis === 'function')
}

function checkUnit (unit) {
  if (!isUnit(unit)) {
    throw new TypeError(`unit must be a TimeUnit (TimeUnit.MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS); got ${describe(unit)}`)
  }
}

/**
 * `unit.toMillis(t)` (node-redisson's errors for what it refuses), as a
 * number of ms of at least `min`, at most Number.MAX_SAFE_INTEGER.
 */
function millis (unit, t, what, min = 0) {
  const ms = unit.toMillis(t)
  if (typeof ms !== 'bigint') throw new TypeError(`unit.toMillis must return a bigint; got ${describe(ms)}`)
  if (ms < BigInt(min)) {
    throw new RangeError(min === 0 ? `${what} must not be negative; got ${describe(t)}` : `${what} must be at least ${min} ms; got ${describe(t)}`)
  }
  if (ms > MAX_MS) throw new RangeError(`${what} is too large: ${ms} ms is more than Number.MAX_SAFE_INTEGER`)
  return Number(ms)
}

module.exports = { nodePrefixName, prefixName, suffixName, describe, isUnit, checkUnit, millis }
