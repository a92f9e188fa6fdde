'use strict'

/**
 * Makes a fresh checkout usable: installs npm dependencies when they are
 * missing or older than package-lock.json, and (re)builds the native addon
 * when it is missing or older than the Rust sources. Run by `npm test` and
 * `npm run demo`, so those two commands are all a newcomer needs.
 */

const { execSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')
const run = (cmd) => execSync(cmd, { cwd: root, stdio: 'inherit' })
const mtime = (p) => { try { return fs.statSync(path.join(root, p)).mtimeMs } catch (_) { return 0 } }

function newestIn (dir) {
  let newest = 0
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestIn(rel) : mtime(rel))
  }
  return newest
}

const installed = mtime('node_modules/.package-lock.json')
if (!installed || installed < mtime('package-lock.json')) {
  console.error('[setup] installing npm dependencies (npm ci)')
  run('npm ci --no-audit --no-fund')
}

const addon = fs.readdirSync(root).filter((f) => f.endsWith('.node')).map(mtime)
const built = addon.length ? Math.max(...addon) : 0
const sources = Math.max(newestIn('src'), mtime('Cargo.toml'), mtime('Cargo.lock'), mtime('build.rs'))
if (!built || built < sources || !fs.existsSync(path.join(root, 'binding.js'))) {
  console.error('[setup] building the native addon (release)')
  run('npm run build')
}
