'use strict'

/**
 * The command line's arguments: `<command> [options] [-- command args…]`.
 * Options are `--name value`, `--name=value` or boolean `--flag`; anything
 * unknown is a usage error (exit 64), never ignored.
 */

class UsageError extends Error {}

// Each option: its kind ('string', 'ms', 'int', 'flag').
const CONNECTION = {
  url: 'string',
  host: 'string',
  port: 'int',
  db: 'int',
  username: 'string',
  password: 'string',
  tls: 'flag',
  'tls-ca': 'string',
  'tls-insecure': 'flag',
  'connect-timeout': 'ms',
  'command-timeout': 'ms'
}

const COMMANDS = {
  run: { ...CONNECTION, key: 'string', timeout: 'ms', wait: 'ms', 'no-wait': 'flag', fencing: 'flag', grace: 'ms' },
  inspect: { ...CONNECTION, key: 'string', json: 'flag' }
}

/** `{ command, options, rest }` from `argv`; throws a UsageError. */
function parse (argv) {
  const [command, ...args] = argv
  const known = COMMANDS[command]
  if (known === undefined) throw new UsageError(command === undefined ? 'no command given' : `unknown command "${command}"`)
  const options = {}
  let rest = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if (arg === '--') {
      rest = args.slice(i + 1)
      break
    }
    if (arg === '--help' || arg === '-h') {
      options.help = true
      continue
    }
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg)
    if (m === null) throw new UsageError(`unexpected argument "${arg}" (a command to run goes after --)`)
    const [, name, inline] = m
    const kind = known[name]
    if (kind === undefined) throw new UsageError(`unknown option --${name} for ${command}`)
    if (kind === 'flag') {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`)
      options[name] = true
      continue
    }
    const value = inline !== undefined ? inline : args[++i]
    if (value === undefined) throw new UsageError(`--${name} needs a value`)
    options[name] = kind === 'string' ? value : number(name, value, kind)
  }
  return { command, options, rest }
}

function number (name, text, kind) {
  const n = Number(text)
  const min = kind === 'ms' ? 1 : 0
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`--${name} must be ${kind === 'ms' ? 'a positive whole number of milliseconds' : 'a whole number'}; got "${text}"`)
  }
  return n
}

/** What the lock connects to: a URL (or REDIS_URL), else the options object of the flags given. */
function connection (options, env) {
  const fs = require('fs')
  const target = {}
  if (options.url !== undefined) target.url = options.url
  else if (options.host === undefined && options.port === undefined && env.REDIS_URL) target.url = env.REDIS_URL
  for (const [flag, field] of [['host', 'host'], ['port', 'port'], ['db', 'db'], ['username', 'username'], ['password', 'password'], ['connect-timeout', 'connectTimeout'], ['command-timeout', 'commandTimeout']]) {
    if (options[flag] !== undefined) target[field] = options[flag]
  }
  if (options.tls || options['tls-ca'] !== undefined || options['tls-insecure']) {
    target.tls = {}
    if (options['tls-ca'] !== undefined) {
      try {
        target.tls.ca = fs.readFileSync(options['tls-ca'], 'utf8')
      } catch (err) {
        throw new UsageError(`--tls-ca: cannot read ${options['tls-ca']}: ${err.message}`)
      }
    }
    if (options['tls-insecure']) target.tls.rejectUnauthorized = false
  }
  if (Object.keys(target).length === 0) target.url = 'redis://127.0.0.1:6379'
  return target
}

module.exports = { parse, connection, UsageError }
