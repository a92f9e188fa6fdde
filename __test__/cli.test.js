'use strict'

/**
 * The `redislock-rs` bin, run as users run it (a child process) against a
 * real redis-server: help and usage errors, a command run with the lock
 * held (its environment, its exit code, the lock released after), a second
 * invocation that gives up or waits, a lost lock that stops the command,
 * signals passed on, and inspect.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('child_process')
const path = require('path')
const { useRedis } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')
const { EXIT } = require('../lib/cli')

const redis = useRedis()
const BIN = path.join(__dirname, '..', 'bin', 'redislock-rs.js')
let seq = 0
const fresh = (what) => `cli:${what}:${process.pid}:${seq++}`

/** Starts the bin; `done` resolves { code, signal, out, err } when it exits. */
function cli (args, env = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, REDIS_URL: '', ...env } })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { err += d })
  const done = new Promise((resolve) => {
    const killer = setTimeout(() => child.kill('SIGKILL'), 30000)
    child.on('exit', (code, signal) => { clearTimeout(killer); resolve({ code, signal, out, err }) })
  })
  return { child, done }
}

const url = () => redis.server.url
const node = (script) => [process.execPath, '-e', script]

async function until (check, what) {
  for (let i = 0; i < 250; i++) {
    if (await check()) return
    await sleep(20)
  }
  assert.fail(`timed out waiting for ${what}`)
}

test('--help explains both commands and the exit codes; bad usage exits 64 and says why', async () => {
  const help = await cli(['--help']).done
  assert.equal(help.code, 0)
  for (const word of ['run', 'inspect', '--wait', '--no-wait', '--fencing', 'REDISLOCK_TOKEN', String(EXIT.NOT_ACQUIRED), String(EXIT.LOST)]) {
    assert.ok(help.out.includes(word), `help mentions ${word}`)
  }
  for (const args of [['run', '--key', 'k'], ['run', '--', 'true'], ['run', '--key', 'k', '--wait', 'soon', '--', 'true'], ['frobnicate'], ['run', '--key', 'k', '--bogus', '--', 'true'], ['run', '--key', 'k', '--wait', '5', '--no-wait', '--', 'true']]) {
    const r = await cli(args).done
    assert.equal(r.code, EXIT.USAGE, `${args.join(' ')}: ${r.err}`)
    assert.match(r.err, /^redislock-rs: .+\nTry 'redislock-rs --help'/)
  }
})

test('run: the command runs with the lock held and its environment, its exit code is ours, the lock is released after', async () => {
  const key = fresh('run')
  const script = `
    const IORedis = require(${JSON.stringify(require.resolve('ioredis'))})
    const c = new IORedis(${JSON.stringify(url())})
    c.get(process.env.REDISLOCK_KEY).then((v) => {
      console.log(JSON.stringify({ key: process.env.REDISLOCK_KEY, held: v === process.env.REDISLOCK_TOKEN, fencing: process.env.REDISLOCK_FENCING_TOKEN }))
      c.disconnect()
      process.exit(3)
    })`
  const r = await cli(['run', '--url', url(), '--key', key, '--fencing', '--timeout', '2000', '--', ...node(script)]).done
  assert.equal(r.code, 3, r.err)
  const seen = JSON.parse(r.out)
  assert.equal(seen.key, key)
  assert.equal(seen.held, true, 'the lock is held, with the token the command was given')
  assert.match(seen.fencing, /^\d+$/)
  assert.equal(await redis.check.exists(key), 0, 'released when the command exited')
  // A command that does not exist: 127, and the lock released.
  const missing = await cli(['run', '--url', url(), '--key', key, '--', 'no-such-command-redislock-rs']).done
  assert.equal(missing.code, EXIT.NOT_FOUND)
  assert.equal(await redis.check.exists(key), 0)
  // --host/--port and REDIS_URL reach the same server.
  const byHost = await cli(['run', '--host', '127.0.0.1', '--port', String(redis.server.port), '--key', key, '--', ...node('process.exit(0)')]).done
  assert.equal(byHost.code, 0, byHost.err)
  const byEnv = await cli(['run', '--key', key, '--', ...node('process.exit(5)')], { REDIS_URL: url() }).done
  assert.equal(byEnv.code, 5, byEnv.err)
})

test('a second invocation gives up at once with --no-wait, after --wait, or waits and runs once the first is done', async () => {
  const key = fresh('second')
  const first = cli(['run', '--url', url(), '--key', key, '--', ...node('setTimeout(() => {}, 1500)')])
  await until(async () => (await redis.check.exists(key)) === 1, 'the first to hold the lock')
  const noWait = await cli(['run', '--url', url(), '--key', key, '--no-wait', '--', ...node('process.exit(0)')]).done
  assert.equal(noWait.code, EXIT.NOT_ACQUIRED)
  assert.match(noWait.err, /held by another/)
  const short = await cli(['run', '--url', url(), '--key', key, '--wait', '200', '--', ...node('process.exit(0)')]).done
  assert.equal(short.code, EXIT.NOT_ACQUIRED)
  const t0 = Date.now()
  const patient = await cli(['run', '--url', url(), '--key', key, '--wait', '20000', '--', ...node('process.exit(7)')]).done
  assert.equal(patient.code, 7, patient.err)
  assert.equal((await first.done).code, 0)
  assert.ok(Date.now() - t0 < 15000)
})

test('a lost lock: the command is sent SIGTERM (SIGKILL after the grace period) and we exit 76', async () => {
  const key = fresh('lost')
  // A command that ignores SIGTERM: the grace period ends it.
  const stubborn = "process.on('SIGTERM', () => console.log('got SIGTERM')); setInterval(() => {}, 1000)"
  const run = cli(['run', '--url', url(), '--key', key, '--timeout', '600', '--grace', '300', '--', ...node(stubborn)])
  await until(async () => (await redis.check.exists(key)) === 1, 'the lock held')
  await sleep(100)
  await redis.check.del(key)
  const r = await run.done
  assert.equal(r.code, EXIT.LOST, r.err)
  assert.match(r.err, /lost/)
  assert.match(r.out, /got SIGTERM/)
})

test('SIGTERM and SIGINT to us are passed on to the command, and the lock is released', async () => {
  for (const [sig, n] of [['SIGTERM', 15], ['SIGINT', 2]]) {
    const key = fresh('signal')
    const run = cli(['run', '--url', url(), '--key', key, '--', ...node(`process.on('${sig}', () => { console.log('child got ${sig}'); process.exit(9) }); setInterval(() => {}, 1000)`)])
    await until(async () => (await redis.check.exists(key)) === 1, 'the lock held')
    await sleep(200)
    run.child.kill(sig)
    const r = await run.done
    assert.equal(r.code, 9, `${sig}: ${r.err}`)
    assert.match(r.out, new RegExp(`child got ${sig}`))
    assert.equal(await redis.check.exists(key), 0, `${sig}: released`)
    assert.ok(n > 0)
  }
  // A signal while waiting for the lock ends the wait: 128 + N, nothing run.
  const key = fresh('signal-wait')
  const holder = cli(['run', '--url', url(), '--key', key, '--', ...node('setTimeout(() => {}, 3000)')])
  await until(async () => (await redis.check.exists(key)) === 1, 'the lock held')
  const waiter = cli(['run', '--url', url(), '--key', key, '--', ...node("console.log('ran')")])
  await sleep(400)
  waiter.child.kill('SIGTERM')
  const w = await waiter.done
  assert.equal(w.code, 128 + 15)
  assert.equal(w.out, '')
  holder.child.kill('SIGTERM')
  await holder.done
})

test('inspect: held, TTL, owner and fencing token, as text and JSON', async () => {
  const key = fresh('inspect')
  const free = await cli(['inspect', '--url', url(), '--key', key, '--json']).done
  assert.equal(free.code, 0, free.err)
  assert.deepEqual(JSON.parse(free.out), { key, held: false, ttlMs: 0, owner: null, fencingToken: null })
  const run = cli(['run', '--url', url(), '--key', key, '--fencing', '--timeout', '5000', '--', ...node('setTimeout(() => {}, 1500)')])
  await until(async () => (await redis.check.exists(key)) === 1, 'the lock held')
  const held = await cli(['inspect', '--url', url(), '--key', key, '--json']).done
  const seen = JSON.parse(held.out)
  assert.equal(seen.held, true)
  assert.equal(seen.owner, await redis.check.get(key))
  assert.ok(seen.ttlMs > 0 && seen.ttlMs <= 5000)
  assert.match(seen.fencingToken, /^\d+$/)
  const text = await cli(['inspect', '--url', url(), '--key', key]).done
  assert.match(text.out, new RegExp(`^${key}: held, \\d+ ms left, owner `))
  await run.done
  const down = await cli(['inspect', '--url', 'redis://127.0.0.1:1', '--key', key, '--connect-timeout', '300']).done
  assert.equal(down.code, EXIT.UNAVAILABLE)
})
