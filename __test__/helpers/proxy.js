'use strict'

/**
 * A small TCP proxy for fault tests: sits between a client and a Redis
 * server and can stop forwarding without closing anything (`blackhole()`,
 * like a pulled cable or a firewall dropping packets), delay every chunk
 * (`delay(ms)`), strand the open connections while new ones work
 * (`strand()`, a half-open socket), or tear every connection down (`drop()`, with a TCP RST
 * when `reset` is true), delay only the replies (`delayReplies(ms)`: the
 * command reaches Redis and runs, its answer comes late), or hold back the
 * commands that match a pattern (`holdBack(/SUBSCRIBE/, ms)`), or what Redis
 * sends that matches one (`holdBackReplies(/message/, ms)`). Chunks keep
 * their order in each direction whatever is delayed. Listens on 127.0.0.1 on
 * a free port, or on the Unix socket `listenPath`; forwards to
 * `targetHost:targetPort`, or to the Unix socket `targetPath`.
 */

const net = require('net')

async function startProxy (targetPort, targetHost = '127.0.0.1', { listenPath, targetPath } = {}) {
  const pairs = new Set()
  let mode = 'forward'
  let delayMs = 0
  let accepted = 0

  let replyDelayMs = 0
  let hold = null // { pattern, ms }: commands held back
  let holdDown = null // the same for what Redis sends
  const holdWaiters = []

  // One queue per direction: a chunk never overtakes one held before it.
  function pipe (from, to, pair, upstreamBound) {
    const queue = []
    let timer = null
    const flush = () => {
      pair.timers.delete(timer)
      timer = null
      while (queue.length && queue[0].at <= Date.now()) {
        const { chunk } = queue.shift()
        if (!to.destroyed) to.write(chunk)
      }
      if (queue.length) arm()
    }
    const arm = () => {
      timer = setTimeout(flush, Math.max(0, queue[0].at - Date.now()))
      pair.timers.add(timer)
      timer.unref()
    }
    from.on('data', (chunk) => {
      if (mode === 'blackhole' || pair.stranded) return // swallowed: nobody hears of it
      let wait = upstreamBound ? delayMs : delayMs + replyDelayMs
      const rule = upstreamBound ? hold : holdDown
      if (rule && rule.pattern.test(chunk.toString('latin1'))) {
        wait = Math.max(wait, rule.ms)
        if (upstreamBound) for (const w of holdWaiters.splice(0)) w()
      }
      if (wait === 0 && queue.length === 0) {
        if (!to.destroyed) to.write(chunk)
        return
      }
      const last = queue.length ? queue[queue.length - 1].at : 0
      queue.push({ chunk, at: Math.max(Date.now() + wait, last) })
      if (!timer) arm()
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
    const upstream = targetPath ? net.connect(targetPath) : net.connect(targetPort, targetHost)
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
    pipe(client, upstream, pair, true)
    pipe(upstream, client, pair, false)
  })

  await new Promise((resolve, reject) => {
    server.once('error', reject)
    if (listenPath) server.listen(listenPath, resolve)
    else server.listen(0, '127.0.0.1', resolve)
  })
  const port = listenPath ? null : server.address().port

  return {
    port,
    /** The Unix socket it listens on, with `listenPath`. */
    path: listenPath || null,
    url: `redis://127.0.0.1:${port}`,
    /** Connections accepted so far. */
    get accepted () { return accepted },
    /** Open client connections right now. */
    get open () { return pairs.size },
    /** Forward normally again (data swallowed meanwhile is lost). */
    forward () { mode = 'forward'; delayMs = 0; replyDelayMs = 0; hold = null; holdDown = null },
    /** Keep every socket open but pass nothing either way, new ones too. */
    blackhole () { mode = 'blackhole' },
    /**
     * Half-open: the connections open now stop passing anything, for good,
     * while new connections forward normally.
     */
    strand () { for (const pair of pairs) pair.stranded = true },
    /** Hold every chunk for `ms` before passing it on. */
    delay (ms) { mode = 'forward'; delayMs = ms },
    /** Pass commands at once but hold every reply for `ms`. */
    delayReplies (ms) { replyDelayMs = ms },
    /** Hold each command chunk matching `pattern` (and what follows it) for `ms`. */
    holdBack (pattern, ms) { hold = { pattern, ms } },
    /** Hold each chunk from Redis matching `pattern` (and what follows it) for `ms`. */
    holdBackReplies (pattern, ms) { holdDown = { pattern, ms } },
    /** Resolves when the next chunk matching the hold-back pattern is held. */
    nextHold () { return new Promise((resolve) => holdWaiters.push(resolve)) },
    /** Close every open connection (with RST when `reset`). */
    drop (reset = true) {
      for (const pair of [...pairs]) {
        for (const t of pair.timers) clearTimeout(t)
        // A Unix socket has no RST: resetAndDestroy throws there.
        if (reset && !pair.client.destroyed && pair.client.remoteAddress !== undefined) pair.client.resetAndDestroy()
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
