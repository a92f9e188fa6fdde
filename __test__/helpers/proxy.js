'use strict'

/**
 * A small TCP proxy for fault tests: sits between a client and a Redis
 * server and can stop forwarding without closing anything (`blackhole()`,
 * like a pulled cable or a firewall dropping packets), delay every chunk
 * (`delay(ms)`), strand the open connections while new ones work
 * (`strand()`, a half-open socket), or tear every connection down (`drop()`, with a TCP RST
 * when `reset` is true). Listens on 127.0.0.1 on a free port.
 */

const net = require('net')

async function startProxy (targetPort, targetHost = '127.0.0.1') {
  const pairs = new Set()
  let mode = 'forward'
  let delayMs = 0
  let accepted = 0

  function pipe (from, to, pair) {
    from.on('data', (chunk) => {
      if (mode === 'blackhole' || pair.stranded) return // swallowed: nobody hears of it
      const send = () => { if (!to.destroyed) to.write(chunk) }
      if (delayMs > 0) {
        const t = setTimeout(send, delayMs)
        pair.timers.add(t)
        t.unref()
      } else {
        send()
      }
    })
  }

  const server = net.createServer((client) => {
    accepted++
    if (mode === 'blackhole') {
      // Accept the TCP connection but never connect upstream or answer.
      const pair = { client, upstream: null, timers: new Set() }
      pairs.add(pair)
      client.on('error', () => {})
      client.on('close', () => pairs.delete(pair))
      return
    }
    const upstream = net.connect(targetPort, targetHost)
    const pair = { client, upstream, timers: new Set() }
    pairs.add(pair)
    client.setNoDelay(true)
    upstream.setNoDelay(true)
    const closeBoth = () => {
      for (const t of pair.timers) clearTimeout(t)
      client.destroy()
      upstream.destroy()
      pairs.delete(pair)
    }
    client.on('error', closeBoth)
    upstream.on('error', closeBoth)
    client.on('close', closeBoth)
    upstream.on('close', closeBoth)
    pipe(client, upstream, pair)
    pipe(upstream, client, pair)
  })

  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const port = server.address().port

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    /** Connections accepted so far. */
    get accepted () { return accepted },
    /** Open client connections right now. */
    get open () { return pairs.size },
    /** Forward normally again (data swallowed meanwhile is lost). */
    forward () { mode = 'forward'; delayMs = 0 },
    /** Keep every socket open but pass nothing either way, new ones too. */
    blackhole () { mode = 'blackhole' },
    /**
     * Half-open: the connections open now stop passing anything, for good,
     * while new connections forward normally.
     */
    strand () { for (const pair of pairs) pair.stranded = true },
    /** Hold every chunk for `ms` before passing it on. */
    delay (ms) { mode = 'forward'; delayMs = ms },
    /** Close every open connection (with RST when `reset`). */
    drop (reset = true) {
      for (const pair of [...pairs]) {
        for (const t of pair.timers) clearTimeout(t)
        if (reset && typeof pair.client.resetAndDestroy === 'function') pair.client.resetAndDestroy()
        else pair.client.destroy()
        if (pair.upstream) pair.upstream.destroy()
        pairs.delete(pair)
      }
    },
    close () {
      this.drop()
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
}

module.exports = { startProxy }
