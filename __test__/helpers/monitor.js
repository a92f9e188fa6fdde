'use strict'

/**
 * `MONITOR` on a plain socket: every command Redis runs (including those a
 * script runs) as an array of its arguments, in order. A plain socket
 * rather than ioredis' `monitor()`, whose ready check can race the MONITOR
 * stream under load ("Command queue state error") and then reconnect
 * forever. Resolves once Redis has confirmed the MONITOR.
 */

const net = require('net')

function unquote (s) {
  return s.replace(/\\x([0-9a-f]{2})|\\(.)/gi, (_, hex, ch) => (hex ? String.fromCharCode(parseInt(hex, 16)) : ch === 'n' ? '\n' : ch === 'r' ? '\r' : ch === 't' ? '\t' : ch))
}

function startMonitor (port, host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, host)
    const seen = []
    const listeners = []
    let buf = ''
    let confirmed = false
    sock.setEncoding('latin1')
    sock.on('error', (err) => { if (!confirmed) reject(err) })
    sock.on('data', (d) => {
      buf += d
      let i
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 2)
        if (!confirmed) {
          if (line === '+OK') {
            confirmed = true
            resolve(api)
          } else {
            reject(new Error(`MONITOR refused: ${line}`))
          }
          continue
        }
        const args = [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => unquote(m[1]))
        if (args.length) {
          seen.push(args)
          for (const fn of listeners) fn(args)
        }
      }
    })
    sock.write('MONITOR\r\n')
    const api = {
      /** Every command seen so far, each an array of its arguments. */
      seen,
      /** Calls `fn(args)` for each command from now on. */
      on (fn) { listeners.push(fn) },
      close () { sock.destroy() }
    }
  })
}

module.exports = { startMonitor }
