'use strict'

/**
 * Waiting in tests: pauses, and calls bounded so that a hung one fails the
 * test (or fixture) instead of hanging it. Fixtures require this by relative
 * path, so it needs nothing but node:assert.
 */

const assert = require('node:assert')

/** Resolves after `ms`. */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Blocks this thread (its event loop) for `ms`: a busy wait, no timers run. */
function block (ms) {
  const until = Date.now() + ms
  while (Date.now() < until);
}

/**
 * Settles `promise` within `limitMs`, timing it: resolves to `{ value, ms }`
 * or `{ err, ms }`; fails (instead of hanging) with
 * "`what`: still pending after `limitMs` ms" if it has not settled by then.
 */
async function settle (promise, limitMs, what = 'call') {
  const t0 = performance.now()
  let timer
  const watchdog = new Promise((resolve) => { timer = setTimeout(() => resolve({ pending: true }), limitMs) })
  const result = await Promise.race([promise.then((value) => ({ value }), (err) => ({ err })), watchdog])
  clearTimeout(timer)
  assert.ok(!result.pending, `${what}: still pending after ${limitMs} ms`)
  result.ms = Math.round(performance.now() - t0)
  return result
}

/**
 * `{ err }` for each of `promises` (`err` null when it resolved), failing if
 * any is still pending after `limitMs`.
 */
async function settleAll (promises, limitMs, what = 'calls') {
  const all = Promise.all(promises.map((p) => p.then(() => ({ err: null }), (err) => ({ err }))))
  return (await settle(all, limitMs, what)).value
}

/** Asserts that a `settle` result failed with an `ErrorClass`. */
function assertFailed (result, ErrorClass, what) {
  assert.ok(result.err, `${what}: expected a ${ErrorClass.name}, but it resolved`)
  assert.ok(result.err instanceof ErrorClass,
    `${what}: expected ${ErrorClass.name}, got ${result.err && result.err.name}: ${result.err && result.err.message}`)
}

module.exports = { sleep, block, settle, settleAll, assertFailed }
