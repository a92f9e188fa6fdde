'use strict'

/**
 * `redislock-rs`, the command line (bin/redislock-rs.js): a lock for shell
 * scripts and cron jobs.
 *
 * - `run`: takes the lock (redislock face, `autoExtend`: the lease keeper
 *   renews it while the command runs, off the event loop), runs the command
 *   with the lock's key, token and fencing token in its environment, and
 *   releases it when the command exits, exiting with its code. A lock that
 *   cannot be had, a lost lock and bad usage each have their own exit code.
 *   SIGINT, SIGTERM and SIGHUP are passed on to the command.
 * - `inspect`: what Redis holds for a key (`inspect()`), as text or JSON.
 */

const { spawn } = require('child_process')
const { parse, connection, UsageError } = require('./args')

/** Exit codes of our own (sysexits.h where one fits). */
const EXIT = {
  USAGE: 64,
  /** Redis could not be reached or failed (EX_UNAVAILABLE). */
  UNAVAILABLE: 69,
  /** The lock is held by another and could not be had in time (EX_TEMPFAIL). */
  NOT_ACQUIRED: 75,
  /** The lock was lost while the command ran; it was stopped. */
  LOST: 76,
  /** The command could not be started (as shells: not found, not executable). */
  NOT_FOUND: 127,
  NOT_EXECUTABLE: 126
}

const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 }

const HELP = `redislock-rs: a Redis lock for shell scripts and cron jobs

Usage:
  redislock-rs run [connection] --key KEY [--timeout MS] [--wait MS | --no-wait]
                   [--fencing] [--grace MS] -- COMMAND [ARGS...]
  redislock-rs inspect [connection] --key KEY [--json]
  redislock-rs --help | --version

run      Takes the lock KEY, runs COMMAND while holding it, releases it when
         COMMAND exits, and exits with COMMAND's exit code. The lock's lease
         (--timeout, default 30000 ms) is renewed every third of it while
         COMMAND runs, so COMMAND may take as long as it needs; if this
         process dies, the lock expires within one lease.
           --wait MS    wait at most MS for the lock (default: wait as long
                        as it takes); --no-wait: one attempt only
           --fencing    also take a fencing token (a number that grows with
                        each holder of KEY)
           --grace MS   after a lost lock, how long COMMAND has between
                        SIGTERM and SIGKILL (default 5000)
         COMMAND's environment also has REDISLOCK_KEY, REDISLOCK_TOKEN and,
         with --fencing, REDISLOCK_FENCING_TOKEN. SIGINT, SIGTERM and SIGHUP
         sent to redislock-rs are passed on to COMMAND.
inspect  Prints whether KEY is held, its TTL, its owner's token and its
         fencing token; --json prints them as one JSON object.

Connection (default: $REDIS_URL, else redis://127.0.0.1:6379):
  --url URL                     redis://, rediss:// or unix:// URL
  --host HOST --port PORT --db N --username U --password P
  --tls  --tls-ca FILE  --tls-insecure
  --connect-timeout MS  --command-timeout MS

Exit codes of run: COMMAND's own (128 + N if a signal N ended it);
  ${EXIT.NOT_ACQUIRED}  the lock is held by another (after --wait, or at once with --no-wait)
  ${EXIT.LOST}  the lock was lost while COMMAND ran (COMMAND was sent SIGTERM, then SIGKILL)
  ${EXIT.UNAVAILABLE}  Redis could not be reached, or failed
  ${EXIT.USAGE}  bad arguments
  ${EXIT.NOT_FOUND} / ${EXIT.NOT_EXECUTABLE}  COMMAND not found / not executable

Examples:
  redislock-rs run --key cron:backup --no-wait -- ./backup.sh
  redislock-rs run --url redis://redis:6379/2 --key deploy --wait 60000 -- make deploy
  redislock-rs inspect --key cron:backup --json
`

/** Runs the command line `argv`; resolves with the exit code. */
async function main (argv, { env = process.env, stdout = process.stdout, stderr = process.stderr } = {}) {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    stdout.write(HELP)
    return argv.length === 0 ? EXIT.USAGE : 0
  }
  if (argv[0] === '--version') {
    stdout.write(`${require('../../package.json').version}\n`)
    return 0
  }
  let parsed
  try {
    parsed = parse(argv)
    if (parsed.options.help) {
      stdout.write(HELP)
      return 0
    }
    if (parsed.options.key === undefined || parsed.options.key === '') throw new UsageError('--key is required')
    parsed.target = connection(parsed.options, env)
    if (parsed.command === 'run') {
      if (parsed.rest.length === 0) throw new UsageError('run needs a command after --')
      if (parsed.options.wait !== undefined && parsed.options['no-wait']) throw new UsageError('--wait and --no-wait cannot go together')
    }
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    stderr.write(`redislock-rs: ${err.message}\nTry 'redislock-rs --help'.\n`)
    return EXIT.USAGE
  }
  return parsed.command === 'run' ? run(parsed, env, stderr) : inspectKey(parsed, stdout, stderr)
}

async function inspectKey ({ options, target }, stdout, stderr) {
  const { inspect } = require('../redislock')
  let found
  try {
    found = await inspect(target, options.key)
  } catch (err) {
    stderr.write(`redislock-rs: cannot inspect "${options.key}": ${err.message}\n`)
    return EXIT.UNAVAILABLE
  }
  const out = { key: options.key, held: found.held, ttlMs: found.ttlMs, owner: found.owner === undefined ? null : found.owner, fencingToken: found.fencingToken === undefined ? null : String(found.fencingToken) }
  if (options.json) {
    stdout.write(JSON.stringify(out) + '\n')
  } else {
    stdout.write(`${out.key}: ${out.held ? `held, ${out.ttlMs} ms left, owner ${out.owner}` : 'not held'}${out.fencingToken !== null ? `, fencing token ${out.fencingToken}` : ''}\n`)
  }
  return 0
}

async function run ({ options, target, rest }, env, stderr) {
  const { createLock, LockAcquisitionError } = require('../redislock')
  const key = options.key
  const timeout = options.timeout || 30000
  const grace = options.grace || 5000
  const lock = createLock(target, {
    timeout,
    autoExtend: true,
    fencing: options.fencing === true,
    wakeOnRelease: true,
    retries: options['no-wait'] ? 0 : -1,
    delay: 100
  })
  // Waiting for the lock: a deadline (--wait) or a signal to us ends it.
  const waiting = new AbortController()
  const timer = options.wait !== undefined ? setTimeout(() => waiting.abort(new Error('wait')), options.wait) : null
  let interrupted = null
  const onWaitSignal = (sig) => { interrupted = sig; waiting.abort(new Error(sig)) }
  const handlers = Object.keys(SIGNALS).map((sig) => [sig, () => onWaitSignal(sig)])
  for (const [sig, h] of handlers) process.on(sig, h)
  try {
    await lock.acquire(key, { signal: waiting.signal })
  } catch (err) {
    if (interrupted !== null) return 128 + SIGNALS[interrupted]
    if (err instanceof LockAcquisitionError && (err.cause !== undefined || /Could not acquire|Exceeded/.test(err.message))) {
      stderr.write(`redislock-rs: the lock "${key}" is held by another${options.wait !== undefined ? ` (waited ${options.wait} ms)` : ''}\n`)
      return EXIT.NOT_ACQUIRED
    }
    stderr.write(`redislock-rs: cannot take the lock "${key}": ${err.message}\n`)
    return EXIT.UNAVAILABLE
  } finally {
    if (timer !== null) clearTimeout(timer)
    for (const [sig, h] of handlers) process.removeListener(sig, h)
  }
  const childEnv = { ...env, REDISLOCK_KEY: key, REDISLOCK_TOKEN: lock._id }
  if (lock.fencingToken !== undefined && lock.fencingToken !== null) childEnv.REDISLOCK_FENCING_TOKEN = String(lock.fencingToken)
  const code = await supervise(rest, childEnv, lock, grace, stderr)
  try {
    if (lock._locked) await lock.release()
  } catch (err) {
    // Lost or gone already: the command's outcome still stands.
    if (code.lost !== true) stderr.write(`redislock-rs: releasing "${key}": ${err.message}\n`)
  }
  return code.exit
}

/** Runs `argv` with the lock held: resolves `{ exit, lost }` once it has exited. */
function supervise (argv, env, lock, grace, stderr) {
  return new Promise((resolve) => {
    let lost = false
    let killer = null
    const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit', env })
    const forward = Object.keys(SIGNALS).map((sig) => [sig, () => { if (child.exitCode === null) child.kill(sig) }])
    for (const [sig, h] of forward) process.on(sig, h)
    const signal = lock.signal
    const onLost = () => {
      lost = true
      const why = signal.reason && signal.reason.message ? signal.reason.message : 'lost'
      stderr.write(`redislock-rs: ${why}; stopping the command\n`)
      child.kill('SIGTERM')
      killer = setTimeout(() => child.kill('SIGKILL'), grace)
    }
    if (signal.aborted) onLost()
    else signal.addEventListener('abort', onLost, { once: true })
    const done = (exit) => {
      for (const [sig, h] of forward) process.removeListener(sig, h)
      signal.removeEventListener('abort', onLost)
      if (killer !== null) clearTimeout(killer)
      resolve({ exit: lost ? EXIT.LOST : exit, lost })
    }
    child.on('error', (err) => {
      stderr.write(`redislock-rs: cannot run ${argv[0]}: ${err.message}\n`)
      done(err.code === 'ENOENT' ? EXIT.NOT_FOUND : EXIT.NOT_EXECUTABLE)
    })
    child.on('exit', (code, sig) => {
      done(code !== null ? code : 128 + (require('os').constants.signals[sig] || 0))
    })
  })
}

module.exports = { main, EXIT, HELP }
