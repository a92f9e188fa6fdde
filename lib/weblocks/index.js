'use strict'

/**
 * redislock-rs/web-locks: the W3C Web Locks API (`navigator.locks`'s
 * `LockManager`) over Redis, so code written against it excludes itself
 * across processes and machines. `new LockManager(client, { prefix, lease,
 * clientId })`, then `request(name[, options], callback)` and `query()`,
 * with the spec's rules (https://w3c.github.io/web-locks/): requests for a
 * name are granted in order, fleet-wide; `shared` ones together, but never
 * past an earlier `exclusive` one; `ifAvailable` gives `null` instead of
 * waiting; `steal` takes the name at once and the previous holders'
 * `request()` rejects with an `AbortError`; an aborted `signal` takes a
 * waiting request out of the queue.
 *
 * Beyond the browser's: the lock's lease is renewed by the lease keeper
 * while the callback runs (a process that dies frees its locks after
 * `lease`), and `lock.signal` aborts when the lock is lost (stolen,
 * deleted, or not renewed in time); the request's `request()` then rejects
 * with an `AbortError` too. The queue's data and steps are the core's
 * (src/locks/weblocks.rs), the operations src/node/ops/weblocks.rs.
 */

const { randomUUID } = require('crypto')
const { start } = require('../native/bridge')
const { WebOp, Flag: { Keep: F_KEEP }, Outcome: { No: NO }, Slot, blank } = require('../native/wire')
const { targetFor } = require('../common/targets')
const keeper = require('../common/keeper')
const { lose, holdOf, kHold } = require('../common/holds')
const { LockBase } = require('../common/lock-base')

const DEFAULT_PREFIX = 'weblocks:'
const DEFAULT_LEASE_MS = 30000
const MODES = ['exclusive', 'shared']
const HOW = { queue: 0, ifAvailable: 1, steal: 2 }

/**
 * A granted request (the spec's `Lock`): its `name` and `mode`; beyond it,
 * `signal` (lib/common/lock-base.js), aborted with an `AbortError` when the
 * lock is lost while held.
 */
class Lock extends LockBase {
  #name
  #mode

  constructor (name, mode) {
    super()
    this[kHold] = null
    this.#name = name
    this.#mode = mode
  }

  get name () {
    return this.#name
  }

  get mode () {
    return this.#mode
  }

  get [Symbol.toStringTag] () {
    return 'Lock'
  }
}

/** A name as the queue keys it: its UTF-16 code units, little-endian, in hex (any string round-trips). */
function tagOf (name) {
  return Buffer.from(name, 'utf16le').toString('hex')
}

function nameOf (tag) {
  return Buffer.from(tag, 'hex').toString('utf16le')
}

function notSupported (message) {
  return new DOMException(message, 'NotSupportedError')
}

/** A positive whole number of ms (`what` names it), or `fallback` when undefined. */
function ms (value, what, fallback) {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`LockManager: ${what} must be a positive whole number of milliseconds; got ${String(value)}`)
  }
  return value
}

class LockManager {
  #target
  #prefix
  #lease
  #clientId

  /**
   * `client`: any client the package takes (node-redis, ioredis, iovalkey,
   * Valkey GLIDE, a URL, an options object, Cluster and Sentinel clients).
   * `prefix` (default 'weblocks:'): every key this manager writes starts
   * with it (after the client's own key prefix), so two prefixes never
   * meet; `lease` (ms, default 30000): how long a lock outlives a process
   * that died holding it, and a queued request one that died waiting;
   * `clientId` (default a random UUID): what `query()` shows for this
   * manager's requests.
   */
  constructor (client, options = {}) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`LockManager: options must be an object; got ${String(options)}`)
    }
    const { prefix = DEFAULT_PREFIX, lease, clientId = randomUUID() } = options
    if (typeof prefix !== 'string') throw new TypeError(`LockManager: prefix must be a string; got ${typeof prefix}`)
    if (typeof clientId !== 'string' || clientId === '') {
      throw new TypeError('LockManager: clientId must be a non-empty string')
    }
    this.#lease = ms(lease, 'lease', DEFAULT_LEASE_MS)
    this.#target = targetFor(client, 'new LockManager')
    this.#prefix = this.#target.prefix + prefix
    this.#clientId = clientId
  }

  /**
   * `request(name, callback)` or `request(name, options, callback)`: calls
   * `callback(lock)` once the lock is granted (with `null` when
   * `ifAvailable` and it is not), holds the lock until the callback's
   * promise settles, and resolves or rejects as the callback did. A native
   * `Promise`.
   */
  request (name, options, callback) {
    try {
      if (callback === undefined) {
        callback = options
        options = {}
      }
      return this.#request(String(name), options, callback)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  #request (name, options, callback) {
    if (options === null || options === undefined) options = {}
    if (typeof options !== 'object') throw new TypeError('LockManager.request: options must be an object')
    const mode = options.mode === undefined ? 'exclusive' : String(options.mode)
    if (!MODES.includes(mode)) {
      throw new TypeError(`LockManager.request: mode must be 'exclusive' or 'shared'; got '${mode}'`)
    }
    const ifAvailable = Boolean(options.ifAvailable)
    const steal = Boolean(options.steal)
    const signal = options.signal === undefined ? null : options.signal
    if (signal !== null && !(signal instanceof AbortSignal)) {
      throw new TypeError('LockManager.request: signal must be an AbortSignal')
    }
    if (typeof callback !== 'function') throw new TypeError('LockManager.request: the callback must be a function')
    if (name.startsWith('-')) throw notSupported(`Lock names starting with '-' are reserved: ${JSON.stringify(name)}`)
    if (steal && ifAvailable) throw notSupported('steal and ifAvailable cannot both be true')
    if (steal && mode !== 'exclusive') throw notSupported('steal requires mode "exclusive"')
    if (signal !== null && (steal || ifAvailable)) throw notSupported('signal cannot be used with steal or ifAvailable')
    if (signal !== null && signal.aborted) return Promise.reject(signal.reason)
    const how = steal ? HOW.steal : ifAvailable ? HOW.ifAvailable : HOW.queue
    return this.#run(name, mode, how, signal, callback)
  }

  async #run (name, mode, how, signal, callback) {
    const tag = tagOf(name)
    const id = randomUUID()
    const hold = keeper.holdId()
    let cancel = 0
    let onAbort = null
    if (signal !== null) {
      cancel = keeper.cancelId()
      onAbort = () => keeper.cancel(cancel)
      signal.addEventListener('abort', onAbort)
    }
    let granted
    try {
      granted = await this.#native(WebOp.Request, tag, id, (args) => {
        args[Slot.Mode] = mode === 'shared' ? 1 : 0
        args[Slot.How] = how
        args[Slot.Flags] = F_KEEP
        args[Slot.Env] = keeper.envId()
        args[Slot.Hold] = hold
        args[Slot.MaxLagMs] = keeper.lagBound(this.#lease)
        if (cancel !== 0) args[Slot.Cancel] = cancel
      })
    } finally {
      if (onAbort !== null) signal.removeEventListener('abort', onAbort)
    }
    if (!granted) {
      if (signal !== null && signal.aborted) throw signal.reason
      return callback(null)
    }
    const lock = new Lock(name, mode)
    let reportLost
    const lost = new Promise((resolve) => { reportLost = resolve })
    const onLost = (reason) => {
      const err = new DOMException(`The lock ${JSON.stringify(name)} was lost (${reason})`, 'AbortError')
      lose(holdOf(lock), reason, name, 'web-locks', err)
      reportLost(err)
      return err
    }
    keeper.watch(hold, lock, null, onLost)
    const settled = (async () => callback(lock))().then(
      (value) => ({ value }),
      (error) => ({ error, failed: true }))
    const first = await Promise.race([settled, lost.then((error) => ({ error, lost: true }))])
    if (first.lost) {
      // Stolen or lost: request() rejects now; the lock is given back (if
      // anything is left of it) once the callback settles.
      settled.then(() => this.#release(tag, id, hold))
      throw first.error
    }
    // Not held any more when given back (stolen, or lost before the
    // keeper's next renewal could tell): the request rejects as a stolen
    // one does.
    if (await this.#release(tag, id, hold) === false) throw onLost('taken')
    if (first.failed) throw first.error
    return first.value
  }

  /**
   * Gives request `id` back: true, false when it was no longer held, null
   * when Redis could not be asked (the keeper stopped renewing it: it is
   * free after its lease).
   */
  async #release (tag, id, hold) {
    keeper.unwatch(hold)
    try {
      return await this.#native(WebOp.Release, tag, id, (args) => { args[Slot.Flags] = F_KEEP })
    } catch (_) {
      return null
    }
  }

  /**
   * `{ held, pending }`: every request on this manager's Redis and prefix,
   * from every manager, each `{ name, mode, clientId }`, in the order they
   * were made for each name.
   */
  query () {
    return this.#native(WebOp.Query, '', '-', () => {}).then((names) => {
      const held = []
      const pending = []
      for (const n of names || []) {
        const name = nameOf(n.tag)
        for (const i of n.held) held.push({ name, mode: i.mode, clientId: i.clientId })
        for (const i of n.pending) pending.push({ name, mode: i.mode, clientId: i.clientId })
      }
      return { held, pending }
    })
  }

  get [Symbol.toStringTag] () {
    return 'LockManager'
  }

  /** One native operation: `fill(args)` writes its numbers; resolves to its value, true, or false. */
  #native (op, tag, id, fill) {
    const t = this.#target
    const args = blank()
    args[Slot.Time] = this.#lease
    fill(args)
    const prefix = this.#prefix
    const clientId = this.#clientId
    return start(settle, null, null, function (opId) {
      t.engine.weblock(t.endpoint, opId, op, prefix, tag, id, clientId, args)
    }, Promise)
  }
}

function settle (_lock, _key, outcome, err, resolve, reject, value) {
  if (err) return reject(err)
  if (value !== undefined) return resolve(value)
  resolve(outcome !== NO)
}

module.exports = { LockManager, Lock }
