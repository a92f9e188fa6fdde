'use strict'

/**
 * The bridge to the native engines. `start` makes one synchronous native
 * call per operation and returns a Bluebird promise; the engine runs the
 * operation and reports finished operations in batches to `onDone`, which
 * hands each outcome to the operation's `settle` function.
 *
 * Two engines, one interface (`acquire`/`release`/`extend` with an id):
 * - `LoopEngine` (src/node/engine/jsloop): the JS-thread engine. The operation runs
 *   on this thread's own libuv loop, crossing no thread. The default on Node
 *   (TCP, Unix sockets and TLS).
 * - `Completer` (src/node/engine/tokio.rs): the tokio engine, on a dedicated
 *   Rust thread. The fallback where libuv cannot be used (Bun, Deno,
 *   Windows), and when `REDISLOCK_RS_ENGINE=tokio`.
 *
 * Node stays alive while operations are pending through one timer that is
 * ref'd only while something is in flight; nothing native holds the loop.
 */

const Promise = require('bluebird')
const native = require('./loader')
const { Outcome } = require('./wire')

const { No: NO, Failed: FAILED, Value: VALUE } = Outcome

const ENGINES = ['js', 'tokio']
const requested = process.env.REDISLOCK_RS_ENGINE || undefined
if (requested !== undefined && !ENGINES.includes(requested)) {
  throw new TypeError(`REDISLOCK_RS_ENGINE must be one of ${ENGINES.join(', ')}; got ${JSON.stringify(requested)}`)
}

/**
 * The pending operations of this environment, with the engines they run
 * on: one table per loaded addon, kept on the addon's exports. Two copies
 * of this package over one loaded `.node` (two installs resolving one
 * hoisted platform package, a test runner that resets its module
 * registry) share the addon's engines, and so share this table: with a
 * table each, both would number operations from 0 and one copy's results
 * would settle the other's promises.
 */
const SHARED = Symbol.for('redislock-rs.operations')
module.exports = native[SHARED] || share(makeOperations(native))

function share (ops) {
  Object.defineProperty(native, SHARED, { value: ops })
  return ops
}

function makeOperations (native) {
  const { Completer, LoopEngine } = native
  // Bun exports libuv's symbols but aborts in them; Deno has no uv_poll.
  // The engine is built for Unix only: elsewhere the binding has no LoopEngine.
  const loopPossible = typeof process.versions.bun !== 'string' && typeof globalThis.Deno === 'undefined' &&
    typeof LoopEngine === 'function' && LoopEngine.available()
  if (requested === 'js' && !loopPossible) {
    throw new Error('REDISLOCK_RS_ENGINE=js, but the JS-thread engine cannot run here (it needs Node\'s libuv on a Unix platform)')
  }
  const useLoop = loopPossible && requested !== 'tokio'

  // A pending operation is a slot: [settle, lock, key, resolve, reject].
  const slots = []
  const freeIds = []
  let inflight = 0
  let tokioEngine = null
  let loopEngine = null

  /**
   * The engine for new locks: an object with `acquire`/`release`/
   * `extend(endpointId, id, ...)`. The JS-thread engine serves every endpoint
   * (TCP, Unix sockets, TLS); chosen once per connection object (lib/common/targets.js).
   */
  function engineFor () {
    if (useLoop) {
      if (loopEngine === null) {
        // Registers this environment's onDone; the operations are plain
        // functions (no class to unwrap per call).
        new LoopEngine(onDone) // eslint-disable-line no-new
        loopEngine = loopOperations(native)
      }
      return loopEngine
    }
    return tokioEngineFor()
  }

  /** The tokio engine (Redis Cluster endpoints always use it). */
  function tokioEngineFor () {
    return tokioEngine || (tokioEngine = new Completer(onDone))
  }

  /** The engine new operations use: 'js' or 'tokio'. */
  function defaultEngine () {
    return useLoop ? 'js' : 'tokio'
  }

  const keepAlive = setInterval(function () {}, 0x7fffffff)
  keepAlive.unref()

  /**
   * Called by the native side with the finished operations (the packing
   * is src/node/wire/done.rs's): each code is `id << 2 | outcome`, an
   * `Outcome`; a `Failed` outcome takes the next item of `values` (an
   * Error whose `code` is the core's), a `Value` outcome the next one as
   * its value. `settle` gets the outcome (`No`, `Yes` or `Value`) and the
   * value; the rest of a batch settles even when one settle throws (see
   * `apply`).
   */
  function onDone (codes, values) {
    let v = 0
    const n = codes.length
    inflight -= n
    if (inflight === 0) keepAlive.unref()
    for (let i = 0; i < n; i++) {
      const code = codes[i]
      const id = code >>> 2
      const slot = slots[id]
      const outcome = code & 3
      let err = null
      let value
      if (outcome === FAILED) err = values[v++]
      else if (outcome === VALUE) value = values[v++]
      if (slot === undefined) continue // not ours: nothing to settle
      slots[id] = undefined
      freeIds.push(id)
      apply(slot, err === null ? outcome : NO, err, value)
    }
  }

  /**
   * Runs `slot`'s settle with an outcome; a settle that throws (its lock
   * object frozen, say) rejects its own promise instead of escaping.
   */
  function apply (slot, outcome, err, value) {
    try {
      slot[0](slot[1], slot[2], outcome, err, slot[3], slot[4], value)
    } catch (thrown) {
      slot[4](thrown)
    }
  }

  /**
   * Starts an operation: `submit(id)` makes the native call, and
   * `settle(lock, key, outcome, err, resolve, reject, value)` runs when it
   * finishes.
   * The promise is a Bluebird one (the redislock face) unless `P` says
   * otherwise (the Redisson face: native promises, as node-redisson).
   */
  function start (settle, lock, key, submit, P = Promise) {
    const id = freeIds.length > 0 ? freeIds.pop() : slots.length
    const slot = [settle, lock, key, null, null]
    const p = new P(function (resolve, reject) {
      slot[3] = resolve
      slot[4] = reject
    })
    try {
      submit(id)
    } catch (err) {
      // The native call refused its arguments (e.g. a lock field set to a
      // string by hand): reject through the promise like any other failure.
      freeIds.push(id)
      apply(slot, NO, err)
      return p
    }
    slots[id] = slot
    if (inflight++ === 0) keepAlive.ref()
    return p
  }

  return { start, rejected, engineFor, tokioEngineFor, defaultEngine }
}

/**
 * The JS-thread engine's operations by the tokio engine's names: every
 * `loopX` entry of the binding as `x` (src/node/entries.rs declares each
 * once for both engines).
 */
function loopOperations (native) {
  const ops = {}
  for (const name of Object.keys(native)) {
    if (/^loop[A-Z]/.test(name) && typeof native[name] === 'function') {
      ops[name[4].toLowerCase() + name.slice(5)] = native[name]
    }
  }
  return ops
}

/** A Bluebird promise already rejected with `err`, called back to `fn` if given. */
function rejected (err, fn) {
  const p = Promise.reject(err)
  return fn === undefined ? p : p.nodeify(fn)
}

