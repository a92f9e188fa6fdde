'use strict'

/**
 * Loads the native addon through the generated loader (../binding.js) and,
 * when no binary fits this machine, replaces the loader's generic "Cannot find
 * native binding" with an error that names the platform package to install,
 * the Rust target triple, and how to fix it.
 */

const pkg = require('../../package.json')

const ARCH = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm' }

/** `x86_64-unknown-linux-gnu` -> `linux-x64-gnu`, as napi-rs names its packages. */
function platformOfTriple (triple) {
  const [cpu, , sys, abi] = triple.split('-')
  const arch = ARCH[cpu] || cpu
  if (triple.endsWith('-apple-darwin')) return `darwin-${arch}`
  if (triple.endsWith('-pc-windows-msvc')) return `win32-${arch}-msvc`
  if (sys === 'linux') return `linux-${arch}-${abi}`
  return `${sys}-${arch}`
}

/** The prebuilt platforms, `{ 'linux-x64-gnu': 'x86_64-unknown-linux-gnu', ... }`. */
function supportedPlatforms () {
  const out = {}
  for (const triple of (pkg.napi && pkg.napi.targets) || []) out[platformOfTriple(triple)] = triple
  return out
}

function isMusl () {
  try {
    const report = process.report && process.report.getReport()
    if (report && report.header && report.header.glibcVersionRuntime) return false
    if (report && Array.isArray(report.sharedObjects)) {
      return report.sharedObjects.some((f) => f.includes('libc.musl-') || f.includes('ld-musl-'))
    }
  } catch (_) {}
  return false
}

/** This machine's platform in napi-rs package naming: `linux-x64-gnu`, `darwin-arm64`, ... */
function currentPlatform () {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

function isInstalled (name) {
  try {
    require.resolve(`${name}/package.json`)
    return true
  } catch (_) {
    return false
  }
}

/** The clear error for a failed load; `cause` is the generated loader's error. */
function missingBinaryError (cause) {
  const platform = currentPlatform()
  const supported = supportedPlatforms()
  const triple = supported[platform]
  const name = `${pkg.name}-${platform}`
  const fromSource = 'build it from source: clone redislock-rs, install Rust (https://rustup.rs), ' +
    'run `npm install` and `npm run build` there, and install that checkout'
  let message
  if (triple) {
    const state = isInstalled(name)
      ? `is installed but its binary could not be loaded (${firstMessage(cause)})`
      : 'is not installed'
    message =
      `${pkg.name}: the native binary for ${platform} (${triple}) could not be loaded. ` +
      `It comes in the optional dependency "${name}@${pkg.version}", which ${state}.\n` +
      `To fix it, run \`npm install\` again without --no-optional / --omit=optional ` +
      '(if node_modules or the lockfile came from another platform, remove node_modules and ' +
      'package-lock.json first: https://github.com/npm/cli/issues/4828), ' +
      `or install it explicitly: \`npm install ${name}@${pkg.version}\`. ` +
      `Or ${fromSource}.`
  } else {
    message =
      `${pkg.name}: there is no prebuilt native binary for ${platform} ` +
      `(${process.platform}/${process.arch}): no package "${name}" exists. ` +
      `Prebuilt binaries exist for: ${Object.entries(supported).map(([p, t]) => `${p} (${t})`).join(', ')}.\n` +
      `To fix it, use one of those platforms, or ${fromSource}.`
  }
  const err = new Error(message, { cause })
  err.code = 'ERR_REDISLOCK_NATIVE_BINDING'
  err.platform = platform
  err.packageName = name
  err.triple = triple || null
  return err
}

function firstMessage (err) {
  // The generated loader chains every attempt as `cause`; the last attempt
  // (the platform package) is at the top.
  const msg = err && err.cause && err.cause.message
  return String(msg || (err && err.message) || err).split('\n')[0]
}

try {
  module.exports = require('../../binding')
} catch (err) {
  // Only the loader's "nothing fits" errors; anything else passes unchanged.
  if (err && /native binding/i.test(err.message) && !/__napiBindingTarget/.test(err.message)) {
    throw missingBinaryError(err)
  }
  throw err
}
