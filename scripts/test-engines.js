'use strict'

/**
 * Runs the whole node suite once per engine: the JS-thread engine (the
 * default on Node) and the tokio engine (the fallback), selected with
 * REDISLOCK_RS_ENGINE. Exits non-zero if either run fails. Extra arguments
 * are test files (default: every __test__/*.test.js).
 */

const { spawnSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')
const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : fs.readdirSync(path.join(root, '__test__')).filter((f) => f.endsWith('.test.js')).sort()
    .map((f) => path.join('__test__', f))

let failed = false
for (const engine of ['js', 'tokio']) {
  console.log(`\n== node --test, engine ${engine} (REDISLOCK_RS_ENGINE=${engine})`)
  const res = spawnSync(process.execPath, ['--test', ...files], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, REDISLOCK_RS_ENGINE: engine }
  })
  if (res.status !== 0) {
    console.error(`== engine ${engine}: node --test exited ${res.status === null ? res.signal : res.status}`)
    failed = true
  }
}
process.exit(failed ? 1 : 0)
