'use strict'

/**
 * The few Redis commands the harness itself sends, over a plain socket with
 * no client library, so that a measuring child loads nothing but its
 * contender: one-shot commands (INFO commandstats, INFO cpu, SCRIPT LOAD) and a MONITOR
 * that counts the commands clients send (not those run inside Lua scripts).
 */

const net = require('net')

function connect (host, port) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, host)
    sock.once('error', reject)
    sock.once('connect', () => { sock.removeListener('error', reject); resolve(sock) })
  })
}

/** A command as a RESP array of bulk strings. */
function encode (args) {
  return `*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')
}

/**
 * Parses one simple, error or bulk-string reply at the start of `buf`:
 * {value, rest} or null when incomplete. (All the harness needs.)
 */
function parseReply (buf) {
  const nl = buf.indexOf('\r\n')
  if (nl < 0) return null
  const head = buf.toString('latin1', 0, nl)
  if (head[0] === '+' || head[0] === ':') return { value: head.slice(1), rest: buf.subarray(nl + 2) }
  if (head[0] === '-') return { error: new Error(head.slice(1)), rest: buf.subarray(nl + 2) }
  if (head[0] !== '$') throw new Error(`redis-raw: unexpected reply ${head}`)
  const len = Number(head.slice(1))
  if (buf.length < nl + 2 + len + 2) return null
  return { value: buf.toString('utf8', nl + 2, nl + 2 + len), rest: buf.subarray(nl + 2 + len + 2) }
}

/** An open connection whose `call(...args)` resolves to the reply's text. */
async function open (host, port) {
  const sock = await connect(host, port)
  let buf = Buffer.alloc(0)
  const waiting = []
  sock.on('data', (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d
    let r
    while (waiting.length && (r = parseReply(buf))) {
      buf = r.rest
      const w = waiting.shift()
      if (r.error) w.reject(r.error)
      else w.resolve(r.value)
    }
  })
  sock.on('error', (err) => { while (waiting.length) waiting.shift().reject(err) })
  return {
    call (...args) {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject })
        sock.write(encode(args))
      })
    },
    close () { sock.destroy() }
  }
}

/** One command on a fresh connection. */
async function command (host, port, ...args) {
  const conn = await open(host, port)
  try { return await conn.call(...args) } finally { conn.close() }
}

/** INFO commandstats text as {command: calls}, without INFO itself. */
function parseCommandStats (text) {
  const out = {}
  for (const line of text.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim())
    if (m && m[1] !== 'info') out[m[1]] = Number(m[2])
  }
  return out
}

/** A function that resolves to the server's command counts, over one connection. */
async function commandStatsReader (host, port) {
  const conn = await open(host, port)
  const read = async () => parseCommandStats(await conn.call('INFO', 'commandstats'))
  read.close = () => conn.close()
  return read
}

/**
 * The server process's CPU time so far, user + system, in seconds, from
 * INFO cpu (`used_cpu_user` + `used_cpu_sys`: the server's getrusage
 * RUSAGE_SELF, every thread of it), over one connection.
 */
async function serverCpuReader (host, port) {
  const conn = await open(host, port)
  const read = async () => {
    const text = await conn.call('INFO', 'cpu')
    const field = (name) => {
      const m = new RegExp(`^${name}:([0-9.]+)`, 'm').exec(text)
      if (!m) throw new Error(`redis-raw: no ${name} in INFO cpu`)
      return Number(m[1])
    }
    return field('used_cpu_user') + field('used_cpu_sys')
  }
  read.close = () => conn.close()
  return read
}

/**
 * MONITOR on its own connection. `counts()` are the commands clients sent
 * since the last `reset()`, by name (upper case); commands run from Lua are
 * left out.
 */
async function monitor (host, port) {
  const sock = await connect(host, port)
  let counts = {}
  let tail = ''
  sock.setEncoding('utf8')
  sock.on('data', (d) => {
    const lines = (tail + d).split('\r\n')
    tail = lines.pop()
    for (const line of lines) {
      // +1700000000.123456 [0 127.0.0.1:5555] "SET" "k" ...   (or [0 lua])
      const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"/.exec(line)
      if (!m || m[1] === 'lua') continue
      const cmd = m[2].toUpperCase()
      counts[cmd] = (counts[cmd] || 0) + 1
    }
  })
  sock.write(encode(['MONITOR']))
  return {
    reset () { counts = {} },
    counts: () => counts,
    close () { sock.destroy() }
  }
}

module.exports = { command, commandStatsReader, serverCpuReader, monitor, parseCommandStats }
