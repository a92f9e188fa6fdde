'use strict'

/**
 * Runs the whole node suite once per server and engine: on `redis-server`
 * and on a `valkey-server` 9 (found or installed by scripts/valkey.js), each
 * on the JS-thread engine (the default on Node) and the tokio engine (the
 * fallback), selected with REDISLOCK_RS_SERVER and REDISLOCK_RS_ENGINE; on
 * Valkey the core's server tests (`cargo test --test core --test weblocks`) run too (on
 * Redis, `npm test` ran them before this). TLS tests run on Redis in both
 * passes: the Valkey build has no TLS (__test__/helpers/redis.js).
 *
 * Exits non-zero if any run fails, or if no Valkey 9 can be had (set
 * REDISLOCK_RS_SERVERS=redis to run on Redis only, knowingly). Extra
 * arguments are test files (default: every __test__/*.test.js).
 */

const { spawnSync } = require('child_process')
const fs = require('fs')
const path = require('path')
const valkey = require('./valkey')

const root = path.join(__dirname, '..')
const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : fs.readdirSync(path.join(root, '__test__')).filter((f) => f.endsWith('.test.js')).sort()
    .map((f) => path.join('__test__', f))

const wanted = (process.env.REDISLOCK_RS_SERVERS || 'redis,valkey').split(',').map((s) => s.trim())
let failed = false
const servers = []
if (wanted.includes('redis')) servers.push(['redis', 'redis-server'])
if (wanted.includes('valkey')) {
  const bin = valkey.find()
  if (bin === null) {
    console.error('== no valkey-server 9 could be found or installed (see above); REDISLOCK_RS_SERVERS=redis skips Valkey knowingly')
    failed = true
  } else {
    servers.push(['valkey', bin])
  }
}

function run (what, cmd, args, env) {
  console.log(`\n== ${what}`)
  const res = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } })
  if (res.status !== 0) {
    console.error(`== ${what}: exited ${res.status === null ? res.signal : res.status}`)
    failed = true
  }
}

for (const [name, bin] of servers) {
  if (name !== 'redis') {
    run(`cargo test --test core --test weblocks on ${name} (${bin})`, 'cargo', ['test', '--no-default-features', '--test', 'core', '--test', 'weblocks'],
      { REDISLOCK_RS_SERVER: bin })
  }
  for (const engine of ['js', 'tokio']) {
    run(`node --test on ${name}, engine ${engine} (REDISLOCK_RS_SERVER=${bin} REDISLOCK_RS_ENGINE=${engine})`,
      process.execPath, ['--test', ...files], { REDISLOCK_RS_SERVER: bin, REDISLOCK_RS_ENGINE: engine })
  }
}
process.exit(failed ? 1 : 0)
