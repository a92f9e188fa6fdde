'use strict'

/**
 * The package as users get it: the per-platform npm/ packages, the release
 * workflow, and a real `npm pack` + offline `npm install` of the main package
 * and this machine's platform package into a fresh project, with no cargo on
 * PATH, that takes and releases a lock on a real Redis through `require` and
 * `import`. Also: the loader's error when no binary fits names the package.
 */

const { test, describe, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const yaml = require('js-yaml')
const { startRedis } = require('./helpers/redis')

const root = path.join(__dirname, '..')
const pkg = require('../package.json')
const napiCli = path.join(root, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js')

const ARCH = { x86_64: 'x64', aarch64: 'arm64' }
const EXPECTED = {
  'x86_64-unknown-linux-gnu': { platform: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' },
  'x86_64-unknown-linux-musl': { platform: 'linux-x64-musl', os: 'linux', cpu: 'x64', libc: 'musl' },
  'aarch64-unknown-linux-gnu': { platform: 'linux-arm64-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc' },
  'aarch64-unknown-linux-musl': { platform: 'linux-arm64-musl', os: 'linux', cpu: 'arm64', libc: 'musl' },
  'x86_64-apple-darwin': { platform: 'darwin-x64', os: 'darwin', cpu: 'x64' },
  'aarch64-apple-darwin': { platform: 'darwin-arm64', os: 'darwin', cpu: 'arm64' },
  'x86_64-pc-windows-msvc': { platform: 'win32-x64-msvc', os: 'win32', cpu: 'x64' }
}

/** This machine in napi-rs package naming (linux-x64-gnu, darwin-arm64, ...). */
function currentPlatform () {
  if (process.platform === 'linux') {
    const report = process.report.getReport()
    const musl = !(report.header && report.header.glibcVersionRuntime)
    return `linux-${process.arch}-${musl ? 'musl' : 'gnu'}`
  }
  if (process.platform === 'win32') return `win32-${process.arch}-msvc`
  return `${process.platform}-${process.arch}`
}

/** PATH without any directory that holds cargo (or rustc). */
function pathWithoutCargo () {
  return (process.env.PATH || '').split(path.delimiter).filter((dir) => dir &&
    !fs.existsSync(path.join(dir, 'cargo')) && !fs.existsSync(path.join(dir, 'rustc')) &&
    !/[\\/]\.cargo[\\/]/.test(dir)).join(path.delimiter)
}

function run (cmd, args, opts = {}) {
  const res = spawnSync(cmd, args, { encoding: 'utf8', timeout: 180000, ...opts })
  if (res.error) throw res.error
  return res
}

function runOk (cmd, args, opts) {
  const res = run(cmd, args, opts)
  assert.equal(res.status, 0, `${cmd} ${args.join(' ')} failed (${res.status}):\n${res.stdout}\n${res.stderr}`)
  return res
}

describe('npm/ platform packages', () => {
  test('one package per napi target, named by napi-rs, carrying only its binary', () => {
    assert.deepEqual([...pkg.napi.targets].sort(), Object.keys(EXPECTED).sort())
    assert.equal(pkg.napi.binaryName, 'redislock-rs')
    const dirs = fs.readdirSync(path.join(root, 'npm')).filter((d) => fs.statSync(path.join(root, 'npm', d)).isDirectory())
    assert.deepEqual(dirs.sort(), Object.values(EXPECTED).map((e) => e.platform).sort())
    for (const [triple, e] of Object.entries(EXPECTED)) {
      const p = require(path.join(root, 'npm', e.platform, 'package.json'))
      const binary = `redislock-rs.${e.platform}.node`
      assert.equal(p.name, `redislock-rs-${e.platform}`, triple)
      assert.equal(p.version, pkg.version, `${p.name} must have the main package's version`)
      assert.equal(p.main, binary)
      assert.deepEqual(p.files, [binary])
      assert.deepEqual(p.os, [e.os])
      assert.deepEqual(p.cpu, [e.cpu])
      assert.deepEqual(p.libc, e.libc ? [e.libc] : undefined, `${p.name} libc`)
      assert.equal(p.license, pkg.license)
      assert.equal(p.dependencies, undefined, `${p.name} must not depend on anything`)
      assert.ok(ARCH[triple.split('-')[0]] === e.cpu)
    }
  })

  test('main package: scripts, files and exports', () => {
    assert.equal(pkg.scripts.artifacts, 'napi artifacts')
    // `npm version` commits only what is staged: the script stages npm/*/package.json
    assert.equal(pkg.scripts.version, 'napi version && git add npm')
    assert.equal(pkg.scripts.prepublishOnly, 'napi prepublish -t npm')
    assert.match(pkg.scripts.build, /^napi build --platform --release --js binding\.js --dts binding\.d\.ts/)
    assert.deepEqual(pkg.bin, { 'redislock-rs': 'bin/redislock-rs.js' })
    assert.deepEqual(pkg.files.sort(), ['bin/', 'binding.d.ts', 'binding.js', 'index.d.ts', 'index.js', 'index.mjs', 'lib/',
      'redisson.d.ts', 'redisson.js', 'redisson.mjs', 'redlock-v5.d.ts', 'redlock-v5.js', 'redlock-v5.mjs',
      'redlock.d.ts', 'redlock.js', 'redlock.mjs', 'semaphore.d.ts', 'semaphore.js', 'semaphore.mjs',
      'web-locks.d.ts', 'web-locks.js', 'web-locks.mjs'])
    assert.deepEqual(pkg.exports['.'], { types: './index.d.ts', require: './index.js', import: './index.mjs' })
    assert.deepEqual(pkg.exports['./redisson'], { types: './redisson.d.ts', require: './redisson.js', import: './redisson.mjs' })
    assert.deepEqual(pkg.exports['./redlock'], { types: './redlock.d.ts', require: './redlock.js', import: './redlock.mjs' })
    assert.deepEqual(pkg.exports['./redlock/v5'], { types: './redlock-v5.d.ts', require: './redlock-v5.js', import: './redlock-v5.mjs' })
    assert.deepEqual(pkg.exports['./semaphore'], { types: './semaphore.d.ts', require: './semaphore.js', import: './semaphore.mjs' })
    assert.deepEqual(pkg.exports['./web-locks'], { types: './web-locks.d.ts', require: './web-locks.js', import: './web-locks.mjs' })
    // Runtime dependencies: bluebird (promises) and its typings (index.d.ts imports them).
    assert.deepEqual(Object.keys(pkg.dependencies).sort(), ['@types/bluebird', 'bluebird'])
  })
})

describe('release workflow', () => {
  const file = path.join(root, '.github', 'workflows', 'release.yml')
  const wf = yaml.load(fs.readFileSync(file, 'utf8'))

  test('parses as YAML with the expected jobs', () => {
    assert.equal(typeof wf, 'object')
    assert.equal(wf.name, 'Release')
    assert.deepEqual(Object.keys(wf.jobs).sort(), ['build', 'publish', 'test', 'test-musl', 'test-windows'])
    for (const [name, job] of Object.entries(wf.jobs)) {
      assert.ok(job['runs-on'], `${name} runs-on`)
      assert.ok(Array.isArray(job.steps) && job.steps.length > 0, `${name} steps`)
      for (const step of job.steps) assert.ok(step.uses || step.run, `${name}: every step uses or runs something`)
    }
    assert.deepEqual(wf.on.push.tags, ['v*'])
  })

  test('builds every napi target and uploads each binary', () => {
    const settings = wf.jobs.build.strategy.matrix.settings
    assert.deepEqual(settings.map((s) => s.target).sort(), [...pkg.napi.targets].sort())
    for (const s of settings) {
      assert.ok(s.host && s.build.includes(`--target ${s.target}`), s.target)
    }
    const upload = wf.jobs.build.steps.find((s) => String(s.uses).startsWith('actions/upload-artifact'))
    assert.equal(upload.with.name, 'bindings-${{ matrix.settings.target }}')
    assert.equal(upload.with.path, '${{ env.APP_NAME }}.*.node')
    assert.equal(wf.env.APP_NAME, pkg.napi.binaryName)
  })

  test('tests download built targets; publish runs napi artifacts and npm publish after the tests', () => {
    const built = new Set(pkg.napi.targets)
    for (const job of ['test', 'test-musl', 'test-windows']) {
      assert.equal(wf.jobs[job].needs, 'build')
      for (const s of wf.jobs[job].strategy.matrix.settings) assert.ok(built.has(s.target), `${job}: ${s.target}`)
      assert.ok(wf.jobs[job].steps.some((s) => String(s.uses).startsWith('actions/download-artifact')))
    }
    const publish = wf.jobs.publish
    assert.deepEqual([...publish.needs].sort(), ['test', 'test-musl', 'test-windows'])
    const runs = publish.steps.map((s) => s.run || '').join('\n')
    assert.match(runs, /npm run artifacts/)
    assert.match(runs, /npm publish --access public/)
    assert.ok(publish.steps.some((s) => s.uses === 'actions/download-artifact@v4' && s.with.path === 'artifacts'))
  })
})

describe('packed and installed into a fresh project', () => {
  const platform = currentPlatform()
  const binary = `redislock-rs.${platform}.node`
  let redis
  let tmp
  let project
  let env
  const tarballs = {}
  const packed = {}

  before(async () => {
    assert.ok(pkg.napi.targets.some((t) => EXPECTED[t].platform === platform), `no napi target for ${platform}`)
    assert.ok(fs.existsSync(path.join(root, binary)), `${binary} is missing: run \`npm run build\` first`)
    redis = await startRedis()
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-pack-'))

    // Stage the repository's publishable files, as the publish job has them
    // after `npm run artifacts`: this platform's real binary in npm/<platform>,
    // the others (built on other runners) as placeholders, never packed here.
    const stage = path.join(tmp, 'stage')
    fs.mkdirSync(stage)
    for (const f of ['package.json', 'README.md', 'LICENSE', ...pkg.files]) {
      if (fs.existsSync(path.join(root, f))) fs.cpSync(path.join(root, f), path.join(stage, f), { recursive: true })
    }
    fs.cpSync(path.join(root, 'npm'), path.join(stage, 'npm'), { recursive: true })
    for (const target of pkg.napi.targets) {
      const p = EXPECTED[target].platform
      const dest = path.join(stage, 'npm', p, `redislock-rs.${p}.node`)
      if (p === platform) fs.copyFileSync(path.join(root, binary), dest)
      else fs.writeFileSync(dest, '')
    }
    // `napi prepublish` reads the last commit message, so the stage is a repository.
    const git = (...args) => runOk('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], { cwd: stage })
    git('init', '-q')
    git('add', '-A')
    git('commit', '-q', '-m', pkg.version)
    // The real prepublishOnly step, minus publishing the platform packages and
    // the GitHub release: it validates npm/* and writes optionalDependencies.
    const prepublishEnv = { ...process.env }
    delete prepublishEnv.GITHUB_REPOSITORY
    delete prepublishEnv.GITHUB_TOKEN
    runOk(process.execPath, [napiCli, 'prepublish', '-t', 'npm', '--skip-optional-publish'], { cwd: stage, env: prepublishEnv })

    const packs = path.join(tmp, 'packs')
    fs.mkdirSync(packs)
    for (const [name, dir] of [['main', stage], ['platform', path.join(stage, 'npm', platform)]]) {
      const res = runOk('npm', ['pack', '--json', '--pack-destination', packs], { cwd: dir })
      const [info] = JSON.parse(res.stdout)
      packed[name] = info
      tarballs[name] = path.join(packs, info.filename)
      console.log(`# npm pack ${info.name}@${info.version}: ${info.filename} ${info.size} bytes packed, ${info.unpackedSize} unpacked, ${info.entryCount} files`)
    }

    // A fresh project with no cargo on PATH. Dependencies (bluebird,
    // @types/bluebird) come from the registry, or from the cache when it
    // already has them: `npm ci` caches tarballs but not the metadata an
    // `--offline` install would need, so a fresh machine has no full cache.
    project = path.join(tmp, 'project')
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'fresh-project', version: '1.0.0', private: true }))
    env = { ...process.env, PATH: pathWithoutCargo() }
    for (const k of Object.keys(env)) if (k.startsWith('NAPI_RS_')) delete env[k]
    runOk('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarballs.main, tarballs.platform], { cwd: project, env })
  })

  after(async () => {
    if (redis) await redis.stop()
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
  })

  test('prepublish listed every platform package at the same version', () => {
    const staged = require(path.join(tmp, 'stage', 'package.json'))
    const expected = {}
    for (const t of pkg.napi.targets) expected[`redislock-rs-${EXPECTED[t].platform}`] = pkg.version
    assert.deepEqual(staged.optionalDependencies, expected)
    const installed = require(path.join(project, 'node_modules', 'redislock-rs', 'package.json'))
    assert.deepEqual(installed.optionalDependencies, expected)
  })

  test('the main tarball holds only what users need; the platform tarball only its binary', () => {
    const mainFiles = packed.main.files.map((f) => f.path).sort()
    const expected = ['bin/redislock-rs.js', 'binding.d.ts', 'binding.js', 'index.d.ts', 'index.js', 'index.mjs', 'package.json',
      'redisson.d.ts', 'redisson.js', 'redisson.mjs', 'redlock.d.ts', 'redlock.js', 'redlock.mjs',
      'redlock-v5.d.ts', 'redlock-v5.js', 'redlock-v5.mjs', 'semaphore.d.ts', 'semaphore.js', 'semaphore.mjs',
      'web-locks.d.ts', 'web-locks.js', 'web-locks.mjs',
      ...fs.readdirSync(path.join(root, 'lib'), { recursive: true }).filter((f) => f.endsWith('.js')).map((f) => `lib/${f}`),
      ...['README.md', 'LICENSE'].filter((f) => fs.existsSync(path.join(root, f)))].sort()
    assert.deepEqual(mainFiles, expected)
    assert.ok(!mainFiles.some((f) => /^(target|__test__|src|npm|benchmark)\/|\.node$/.test(f)), mainFiles.join(', '))
    // Mostly the README and lib/ (six faces, the CLI); no binaries, sources or tests.
    assert.ok(packed.main.size < 160 * 1024, `main tarball is ${packed.main.size} bytes`)
    const platformFiles = packed.platform.files.map((f) => f.path).sort()
    assert.deepEqual(platformFiles, [...['README.md'].filter((f) => fs.existsSync(path.join(tmp, 'stage', 'npm', platform, f))), binary, 'package.json'].sort())
    const size = packed.platform.files.find((f) => f.path === binary).size
    assert.equal(size, fs.statSync(path.join(root, binary)).size)
  })

  test('the installed bin runs from the fresh project', () => {
    const bin = path.join(project, 'node_modules', '.bin', 'redislock-rs')
    const res = spawnSync(bin, ['--help'], { cwd: project, env, encoding: 'utf8' })
    assert.equal(res.status, 0, `${res.stdout}${res.stderr}`)
    assert.match(res.stdout, /^redislock-rs: a Redis lock for shell scripts/)
  })

  test('cargo is not reachable from the fresh project', () => {
    const res = spawnSync('cargo', ['--version'], { cwd: project, env, encoding: 'utf8' })
    assert.equal(res.error && res.error.code, 'ENOENT', `cargo ran: ${res.stdout}`)
  })

  const script = (kind) => `
    ${kind === 'cjs'
      ? "const redislock = require('redislock-rs'); const { createLock, LockAcquisitionError, getAcquiredLocks } = redislock"
      : "import redislock, { createLock, LockAcquisitionError, getAcquiredLocks } from 'redislock-rs'; import { createRequire } from 'node:module'; const require = createRequire(import.meta.url)"}
    const url = process.argv[2]
    const key = 'fresh:${kind}:' + process.pid
    const a = createLock(url, { timeout: 5000 })
    const b = redislock.createLock(url)
    const out = { kind: '${kind}' }
    await a.acquire(key)
    out.held = a._locked && a._key === key && getAcquiredLocks().length === 1
    out.blocked = await b.acquire(key).then(() => 'acquired', (e) => e instanceof LockAcquisitionError ? e.message : 'other: ' + e)
    await a.extend(8000)
    await a.release()
    await b.acquire(key)
    await b.release()
    out.released = !a._locked && !b._locked && getAcquiredLocks().length === 0
    const { Redisson } = ${kind === 'cjs' ? "require('redislock-rs/redisson')" : "await import('redislock-rs/redisson')"}
    const redisson = new Redisson({ redis: { client: url } })
    out.reentrant = await redisson.getLock(key + ':r', 'c').tryLock(0, 5000) && await redisson.getLock(key + ':r', 'c').tryLock(0, 5000)
    await redisson.getLock(key + ':r', 'c').forceUnlock()
    const Redlock = ${kind === 'cjs' ? "require('redislock-rs/redlock')" : "(await import('redislock-rs/redlock')).default"}
    const redlock = new Redlock([url], { retryCount: 0 })
    const rl = await redlock.lock([key + ':a', key + ':b'], 5000)
    out.redlock = await redlock.lock(key + ':b', 5000).then(() => 'acquired', (e) => e instanceof Redlock.LockError ? e.message : 'other: ' + e)
    await rl.unlock()
    const v5 = ${kind === 'cjs' ? "require('redislock-rs/redlock/v5')" : "await import('redislock-rs/redlock/v5')"}
    const r5 = new v5.default([url], { retryCount: 0 })
    const l5 = await r5.acquire([key + ':c'], 5000)
    out.v5 = await r5.acquire([key + ':c'], 5000).then(() => 'acquired', (e) => e instanceof v5.ExecutionError ? e.message : 'other: ' + e)
    await l5.release()
    out.binary = require.resolve('redislock-rs-${platform}')
    out.main = require.resolve('redislock-rs')
    ${kind === 'mjs' ? "out.esm = import.meta.resolve('redislock-rs')" : ''}
    console.log(JSON.stringify(out))
  `

  for (const kind of ['cjs', 'mjs']) {
    test(`acquires and releases a lock through ${kind === 'cjs' ? 'require' : 'import'}`, () => {
      const file = path.join(project, `check.${kind}`)
      fs.writeFileSync(file, kind === 'cjs' ? `(async () => {${script(kind)}})().catch((e) => { console.error(e); process.exit(1) })` : script(kind))
      const res = run(process.execPath, [file, redis.url], { cwd: project, env, timeout: 30000 })
      assert.equal(res.status, 0, res.stderr)
      console.log(`# fresh install, ${kind}: ${res.stdout.trim()}`)
      const out = JSON.parse(res.stdout)
      assert.equal(out.held, true)
      assert.match(out.blocked, /^Could not acquire lock on "fresh:/)
      assert.equal(out.released, true)
      assert.equal(out.reentrant, true)
      assert.match(out.redlock, /^Exceeded 0 attempts to lock the resource "fresh:/)
      assert.equal(out.v5, 'The operation was unable to achieve a quorum during its retry window.')
      const modules = fs.realpathSync(path.join(project, 'node_modules'))
      assert.equal(out.binary, path.join(modules, `redislock-rs-${platform}`, binary))
      assert.ok(out.main.startsWith(modules + path.sep), out.main)
      if (kind === 'mjs') assert.equal(out.esm, require('node:url').pathToFileURL(path.join(modules, 'redislock-rs', 'index.mjs')).href)
      assert.equal(fs.readdirSync(path.join(modules, 'redislock-rs')).filter((f) => f.endsWith('.node')).length, 0)
    })
  }

  /** Runs `code` in the fresh project as if on `platform`/`arch`. */
  function asIf (fakePlatform, fakeArch, code, ext = 'cjs') {
    const preload = path.join(project, 'fake-platform.cjs')
    fs.writeFileSync(preload,
      `Object.defineProperty(process, 'platform', { value: ${JSON.stringify(fakePlatform)} })\n` +
      `Object.defineProperty(process, 'arch', { value: ${JSON.stringify(fakeArch)} })\n`)
    const file = path.join(project, `fake.${ext}`)
    fs.writeFileSync(file, code)
    return run(process.execPath, ['--require', preload, file], { cwd: project, env, timeout: 30000 })
  }

  test('an unsupported platform gets an error naming the package that does not exist', () => {
    for (const ext of ['cjs', 'mjs']) {
      const res = asIf('aix', 'ppc64', ext === 'cjs' ? "require('redislock-rs')" : "import 'redislock-rs'", ext)
      assert.notEqual(res.status, 0)
      assert.match(res.stderr, /redislock-rs: there is no prebuilt native binary for aix-ppc64 \(aix\/ppc64\): no package "redislock-rs-aix-ppc64" exists/)
      assert.match(res.stderr, /linux-x64-gnu \(x86_64-unknown-linux-gnu\)/)
      assert.match(res.stderr, /npm run build/)
      // What the user reads first is this message, not the loader's generic one (kept as cause).
      const thrown = res.stderr.split('\n').find((l) => /^(Error|\w*Error)\b/.test(l))
      assert.match(thrown, /^Error: redislock-rs: there is no prebuilt native binary for aix-ppc64/)
    }
  })

  test('a supported platform whose package is not installed gets the package, the triple and the fix', () => {
    const [fakePlatform, fakeArch, name, triple] = platform === 'darwin-arm64'
      ? ['win32', 'x64', 'redislock-rs-win32-x64-msvc', 'x86_64-pc-windows-msvc']
      : ['darwin', 'arm64', 'redislock-rs-darwin-arm64', 'aarch64-apple-darwin']
    const res = asIf(fakePlatform, fakeArch, `
      try { require('redislock-rs') } catch (e) {
        console.log(JSON.stringify({ message: e.message, code: e.code, packageName: e.packageName, triple: e.triple, cause: e.cause && e.cause.message }))
        process.exit(3)
      }`)
    assert.equal(res.status, 3, res.stderr)
    const err = JSON.parse(res.stdout)
    assert.equal(err.code, 'ERR_REDISLOCK_NATIVE_BINDING')
    assert.equal(err.packageName, name)
    assert.equal(err.triple, triple)
    assert.ok(err.message.includes(`"${name}@${pkg.version}", which is not installed`), err.message)
    assert.ok(err.message.includes(`(${triple})`), err.message)
    assert.ok(err.message.includes('without --no-optional / --omit=optional'), err.message)
    assert.ok(err.message.includes(`npm install ${name}@${pkg.version}`), err.message)
    assert.ok(err.message.includes('npm run build'), err.message)
    assert.match(err.cause, /Cannot find native binding/, 'the generated loader error is kept as cause')
  })
})
