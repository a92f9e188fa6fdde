'use strict'

/**
 * The wire between JavaScript and native, JavaScript's half: the tables
 * (operations, option bits, the slots of an operation's numbers, outcomes)
 * come from the binding, where src/node/wire/ declares them once, so no
 * number is copied here; `nums` fills an operation's numbers by slot name.
 */

const { LockOp, RedissonOp, SyncOp, Flag, Slot, Outcome } = require('./loader')

// Slot names as `nums` takes them: { time, retries, … } → Slot.Time, ….
const SLOTS = Object.keys(Slot)
  .filter((name) => name !== 'Count' && typeof Slot[name] === 'number')
  .map((name) => [name[0].toLowerCase() + name.slice(1), Slot[name]])

/**
 * An operation's numbers: `fields` by slot name (`time`, `retries`,
 * `delay`, `flags`, `hold`, `env`, `maxLagMs`, `maxHoldMs`, `cancel`,
 * `replicas`, `replicaTimeoutMs`, `serverTimeoutMs`, `jitterMs`,
 * `waitMs`, `permits`, …; see src/node/wire/nums.rs), 0 where not given.
 */
function nums (fields) {
  // A Float64Array: the native side reads it in place (an Array costs a
  // conversion per element, about 1 µs per call for the whole set).
  const out = new Float64Array(Slot.Count)
  for (let i = 0; i < SLOTS.length; i++) {
    const v = fields[SLOTS[i][0]]
    if (v !== undefined) out[SLOTS[i][1]] = v
  }
  return out
}

module.exports = { LockOp, RedissonOp, SyncOp, Flag, Slot, Outcome, nums }
