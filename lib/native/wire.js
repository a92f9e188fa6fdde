'use strict'

/**
 * The wire between JavaScript and native, JavaScript's half: the tables
 * (operations, option bits, the slots of an operation's numbers, outcomes)
 * come from the binding, where src/node/wire/ declares them once, so no
 * number is copied here; `nums` fills an operation's numbers by slot name.
 */

const { LockOp, RedissonOp, SyncOp, WebOp, Flag, Slot, Outcome, GRANT_SPAN } = require('./loader')

// Slot numbers by the names `nums` takes them: { time, retries, … } → Slot.Time, ….
const INDEX = new Map(Object.keys(Slot)
  .filter((name) => name !== 'Count' && typeof Slot[name] === 'number')
  .map((name) => [name[0].toLowerCase() + name.slice(1), Slot[name]]))

// One operation's numbers at a time. A Float64Array is read in place by
// the native entry (an Array costs a conversion per element), which
// copies it before it returns (src/node/wire/nums.rs `Nums::new`), so one
// buffer serves every call: a Float64Array per operation cost a backing
// store each (malloc, V8's registry and sweeper; benchmark/NOTES.md §28).
const SCRATCH = new Float64Array(Slot.Count)

/**
 * An operation's numbers: `fields` by slot name (`time`, `retries`,
 * `delay`, `flags`, `hold`, `env`, `maxLagMs`, `maxHoldMs`, `cancel`,
 * `replicas`, `replicaTimeoutMs`, `serverTimeoutMs`, `jitterMs`,
 * `waitMs`, `permits`, …; see src/node/wire/nums.rs), 0 where not given.
 * The array returned is the one every call fills: pass it straight to
 * the native call, with no other `nums` or `blank` call in between.
 */
function nums (fields) {
  const args = blank()
  for (const name in fields) {
    const v = fields[name]
    const slot = INDEX.get(name)
    if (v !== undefined && slot !== undefined) args[slot] = v
  }
  return args
}

/**
 * The same buffer as `nums`'s, zeroed, for a caller that writes its
 * numbers by `Slot` itself (no lookup by name), under the same rule.
 */
function blank () {
  SCRATCH.fill(0)
  return SCRATCH
}

/**
 * A Redlock operation's answer as a report: a grant every server voted
 * for may come as one number, `validityMs * GRANT_SPAN + attempts`
 * (src/node/wire/done.rs `QuorumGrant`), anything else as its object.
 */
function unpackGrant (value) {
  if (typeof value !== 'number') return value
  const attempts = value % GRANT_SPAN
  return { granted: true, validityMs: (value - attempts) / GRANT_SPAN, attempts }
}

module.exports = { LockOp, RedissonOp, SyncOp, WebOp, Flag, Slot, Outcome, nums, blank, unpackGrant }
