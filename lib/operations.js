'use strict'

/**
 * The bridge to the native I/O thread. `start` makes one synchronous native
 * call per operation and returns a Bluebird promise; the native side runs
 * the operation on its own thread and reports finished operations in
 * batches to `onDone`, which hands each outcome to the operation's `settle`
 * function (see Completer in src/node.rs).
 *
 * Node stays alive while operations are pending through one timer that is
 * ref'd only while something is in flight; nothing native holds the loop.
 */

const Promise = require('bluebird')
const { Completer } = require('./native')

// A pending operation is a slot: [settle, lock, key, resolve, reject].
const slots = []
const freeIds = []
let inflight = 0
let completer = null

const keepAlive = setInterval(function () {}, 0x7fffffff)
keepAlive.unref()

/**
 * Called by the native side with the finished operations: each code is
 * `id << 2 | outcome` (0 = false, 1 = true, 2 = error, whose message is the
 * next one in `errors`).
 */
function onDone (codes, errors) {
  let e = 0
  const n = codes.length
  inflight -= n
  if (inflight === 0) keepAlive.unref()
  for (let i = 0; i < n; i++) {
    const code = codes[i]
    const id = code >>> 2
    const slot = slots[id]
    slots[id] = undefined
    freeIds.push(id)
    const outcome = code & 3
    const err = outcome === 2 ? new Error(errors[e++]) : null
    slot[0](slot[1], slot[2], outcome === 1, err, slot[3], slot[4])
  }
}

/**
 * Starts an operation: `submit(completer, id)` makes the native call, and
 * `settle(lock, key, done, err, resolve, reject)` runs when it finishes.
 */
function start (settle, lock, key, submit) {
  if (completer === null) completer = new Completer(onDone)
  const id = freeIds.length > 0 ? freeIds.pop() : slots.length
  const slot = [settle, lock, key, null, null]
  const p = new Promise(function (resolve, reject) {
    slot[3] = resolve
    slot[4] = reject
  })
  try {
    submit(completer, id)
  } catch (err) {
    // The native call refused its arguments (e.g. a lock field set to a
    // string by hand): reject through the promise like any other failure.
    freeIds.push(id)
    settle(lock, key, false, err, slot[3], slot[4])
    return p
  }
  slots[id] = slot
  if (inflight++ === 0) keepAlive.ref()
  return p
}

module.exports = { start }
