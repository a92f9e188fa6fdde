'use strict'

/**
 * Starts and stops throwaway `redis-server` processes for the tests, on free
 * ports, keeping nothing on disk. Only processes started here are stopped,
 * by PID.
 *
 * The server binary is `redis-server`, or the one REDISLOCK_RS_SERVER names
 * (scripts/test-engines.js runs the suites once on Redis and once on a
 * `valkey-server`). A server with TLS is always `redis-server`: the Valkey
 * build the tests install (scripts/valkey.js) has no TLS.
 */

const { spawn } = require('child_process')
const net = require('net')
const path = require('path')
const { sleep } = require('./wait')

/** A TCP port nothing listens on right now. */
function freePort () {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

function waitForPort (port, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const sock = net.connect(port, '127.0.0.1')
      sock.once('connect', () => { sock.destroy(); resolve() })
      sock.once('error', () => {
        sock.destroy()
        if (Date.now() > deadline) reject(new Error(`redis-server did not listen on ${port}`))
        else setTimeout(attempt, 20)
      })
    }
    attempt()
  })
}

/** The server binary the tests run: `redis-server` unless REDISLOCK_RS_SERVER names another. */
function serverBin () {
  return process.env.REDISLOCK_RS_SERVER || 'redis-server'
}

/** 'valkey' when the tests run on a valkey-server, else 'redis'. */
function serverKind () {
  return /valkey/.test(path.basename(serverBin())) ? 'valkey' : 'redis'
}

/**
 * Starts `redis-server` (see serverBin) with `--save '' --appendonly no` plus `args` (or, with
 * `sentinelConf`, a sentinel on that config file).
 * Resolves to {port, pid, url, stop(), restart()}.
 */
async function startRedis (options = {}) {
  const port = options.port || await freePort()
  // A sentinel (options.sentinelConf) reads its own, writable config file.
  const args = options.sentinelConf
    ? [options.sentinelConf, '--sentinel', '--port', String(port), '--daemonize', 'no']
    : ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
        '--daemonize', 'no', ...(options.args || [])]
  let proc = null
  const server = {
    port,
    get pid () { return proc && proc.pid },
    url: `redis://127.0.0.1:${port}`,
    async start () {
      const bin = options.bin || (args.includes('--tls-port') ? 'redis-server' : serverBin())
      proc = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] })
      let stderr = ''
      proc.stderr.on('data', (d) => { stderr += d })
      const exited = new Promise((resolve, reject) => proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${stderr}`))))
      exited.catch(() => {})
      await Promise.race([waitForPort(options.waitPort || port, 10000), exited])
      return server
    },
    /** Stops this server (SIGKILL when `hard`), waiting for the process to go. */
    stop (hard = false) {
      const p = proc
      proc = null
      if (!p || p.exitCode !== null || p.signalCode !== null) return Promise.resolve()
      return new Promise((resolve) => {
        p.once('exit', () => resolve())
        p.kill(hard ? 'SIGKILL' : 'SIGTERM')
      })
    },
    async restart (pauseMs = 0) {
      await server.stop()
      if (pauseMs) await sleep(pauseMs)
      return server.start()
    }
  }
  await server.start()
  return server
}

/**
 * For a test file: starts a redis-server (startRedis `options`) before its
 * tests, with an ioredis client `check` on it for looking at what landed,
 * and stops both after them. Returns `{ server, check }`, filled in once
 * started.
 */
function useRedis (options = {}) {
  const { before, after } = require('node:test')
  const ctx = { server: null, check: null }
  before(async () => {
    ctx.server = await startRedis(options)
    const IORedis = require('ioredis')
    ctx.check = new IORedis({ port: ctx.server.port })
  })
  after(async () => {
    if (ctx.check) await ctx.check.quit()
    if (ctx.server) await ctx.server.stop()
  })
  return ctx
}

/**
 * Runs `fn(client)` on a short-lived ioredis connection to 127.0.0.1:`port`
 * (`options` added; no retries, no reconnecting) and closes it after;
 * connection and Redis errors reject. The one place tests open a one-shot
 * client.
 */
async function withClient (options, port, fn) {
  const IORedis = require('ioredis')
  const c = new IORedis({ ...options, port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  c.on('error', () => {})
  try {
    await c.connect()
    return await fn(c)
  } finally {
    c.disconnect()
  }
}

/** One command on a short-lived connection to `port`: its reply; Redis errors reject. */
async function command (port, ...args) {
  return withClient({}, port, (c) => c.call(...args))
}

/**
 * One command on a short-lived connection to 127.0.0.1:`port`: its reply,
 * or null when the server is down or refuses it (for polling a topology
 * while it changes).
 */
async function ask (port, ...command) {
  return askWith({}, port, ...command)
}

/** `ask` with connection options (e.g. `{ password }`). */
async function askWith (options, port, ...command) {
  return withClient(options, port, (c) => c.call(...command)).catch(() => null)
}

/**
 * A long-lived ioredis client on 127.0.0.1:`port` for setting things up and
 * looking at them (DEBUG SLEEP, SCRIPT FLUSH, ...): one retry per command,
 * reconnecting every 50 ms. `options` are added (or override).
 */
function admin (port, options = {}) {
  const IORedis = require('ioredis')
  return new IORedis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 50, ...options })
}

module.exports = { serverBin, serverKind, startRedis, freePort, useRedis, withClient, command, ask, askWith, admin }
