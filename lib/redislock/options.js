'use strict'

/**
 * The createLock options beyond redislock 1.3.0 (autoExtend, fencing,
 * wakeOnRelease, replicas, replicaTimeout), checked and turned into the
 * lock's option bits; and how a bad value is shown in a message.
 */

const inspect = require('util').inspect
const keeper = require('../common/keeper')
const { Flag: { Fencing: F_FENCING, Wake: F_WAKE, Keep: F_KEEP } } = require('../native/wire')

// Not a native bit: marks a hold whose extend must go through lockx.
const F_REPLICAS = 8

function flag (options, name) {
  const v = options[name]
  if (v === undefined || v === null || v === false) return false
  if (v === true) return true
  throw new TypeError(`createLock option ${name} must be true or false; got ${describeKey(v)}`)
}

/** The options beyond redislock 1.3.0, checked; null when none is on. */
function extrasOf (options) {
  const autoExtend = keeper.autoExtendOf(options)
  const fencing = flag(options, 'fencing')
  const wake = flag(options, 'wakeOnRelease')
  const replicas = countOption(options, 'replicas')
  const replicaTimeout = options.replicaTimeout === undefined || options.replicaTimeout === null
    ? 1000
    : countOption(options, 'replicaTimeout')
  if (replicas > 0 && replicaTimeout === 0) throw new RangeError('createLock option replicaTimeout must be at least 1 ms')
  if (autoExtend === null && !fencing && !wake && replicas === 0) return null
  return {
    autoExtend,
    replicas,
    replicaTimeout: replicas > 0 ? replicaTimeout : 0,
    flags: (fencing ? F_FENCING : 0) | (wake ? F_WAKE : 0) | (autoExtend ? F_KEEP : 0) | (replicas > 0 ? F_REPLICAS : 0)
  }
}

function countOption (options, name) {
  const v = options[name]
  if (v === undefined || v === null) return 0
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > 0xffffffff) {
    throw new RangeError(`createLock option ${name} must be a non-negative integer; got ${describeKey(v)}`)
  }
  return v
}

function describeKey (key) {
  return inspect(key, { breakLength: Infinity, maxStringLength: 200, depth: 0 })
}

module.exports = { extrasOf, describeKey, F_REPLICAS }
