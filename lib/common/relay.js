'use strict'

/**
 * Clients with no server we can reach (an in-memory mock such as
 * ioredis-mock, or any object marked with `viaClient()`): the native core
 * still decides every command, and hands each one here (src/node/relay.rs)
 * to be sent through the client's own methods; the reply goes back as RESP
 * bytes, parsed natively as a server's would be. Slower than our own
 * connection, but the same commands and scripts. Such endpoints run on the
 * tokio engine; nothing here keeps the process alive.
 */

const native = require('../native/loader')

const MARK = Symbol.for('redislock-rs.viaClient')
const relays = new WeakMap()

/**
 * Marks `client` so that every face sends its commands through it (its
 * `call(cmd, ...args)`, `sendCommand([cmd, ...args])`,
 * `send_command(cmd, args, cb)` or a method named after the command),
 * rather than opening a connection of its own to its server. Returns it.
 */
function viaClient (client) {
  if (client === null || typeof client !== 'object') throw new TypeError('viaClient() takes a client object')
  Object.defineProperty(client, MARK, { value: true, configurable: true })
  return client
}

/** Whether `client` takes the relay path: marked, or an in-memory mock we know. */
function isRelayed (client) {
  if (client === null || typeof client !== 'object') return false
  if (client[MARK] === true) return true
  const ctor = client.constructor
  return typeof ctor === 'function' && /^_?RedisMock$/.test(ctor.name)
}

/** The relay id of `client`, opened on first use. */
function relayOf (client) {
  let id = relays.get(client)
  if (id === undefined) {
    id = native.relayOpen(function (ticket, args) { send(client, ticket, args) })
    relays.set(client, id)
  }
  return id
}

/** Sends one command through `client` and answers ticket `ticket`. */
function send (client, ticket, args) {
  let pending
  try {
    pending = issue(client, args.map((b) => b.toString()))
  } catch (err) {
    pending = Promise.reject(err)
  }
  Promise.resolve(pending).then(
    (value) => native.relayReply(ticket, encode(value), null),
    (err) => {
      const message = String(err && err.message !== undefined ? err.message : err).replace(/[\r\n]+/g, ' ')
      // A Redis error reply (NOSCRIPT, WRONGTYPE…: a code in capitals
      // first) goes back as one; anything else is the client failing.
      if ((err && err.name === 'ReplyError') || /^[A-Z][A-Z_-]+ /.test(message)) {
        native.relayReply(ticket, Buffer.from(`-${message}\r\n`), null)
      } else {
        native.relayReply(ticket, null, message)
      }
    }
  )
}

function issue (client, [name, ...rest]) {
  const method = client[name.toLowerCase()]
  // A recognised mock (not marked): its method named after the command.
  if (client[MARK] !== true && typeof method === 'function') return method.apply(client, rest)
  if (typeof client.call === 'function' && typeof client.defineCommand === 'function') return client.call(name, ...rest)
  if (typeof client.sendCommand === 'function' && client.sendCommand.length <= 2) return client.sendCommand([name, ...rest])
  if (typeof client.send_command === 'function') {
    return new Promise((resolve, reject) => client.send_command(name, rest, (err, v) => err ? reject(err) : resolve(v)))
  }
  if (typeof method === 'function') return method.apply(client, rest)
  throw new Error(`the client has no way to send ${name} (call, sendCommand, send_command or ${name.toLowerCase()})`)
}

/** `value` as RESP: what a server would have sent. */
function encode (value) {
  const parts = []
  put(parts, value)
  return Buffer.concat(parts)
}

function put (parts, v) {
  if (v === null || v === undefined || v === false) {
    parts.push(Buffer.from('$-1\r\n'))
  } else if (v === true) {
    parts.push(Buffer.from(':1\r\n'))
  } else if ((typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint') {
    parts.push(Buffer.from(`:${v}\r\n`))
  } else if (typeof v === 'number') {
    put(parts, String(v))
  } else if (v === 'OK') {
    parts.push(Buffer.from('+OK\r\n'))
  } else if (typeof v === 'string' || Buffer.isBuffer(v)) {
    const b = Buffer.isBuffer(v) ? v : Buffer.from(v)
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'))
  } else if (Array.isArray(v)) {
    parts.push(Buffer.from(`*${v.length}\r\n`))
    for (const item of v) put(parts, item)
  } else {
    put(parts, String(v))
  }
}

module.exports = { viaClient, isRelayed, relayOf }
