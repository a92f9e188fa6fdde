'use strict'

/**
 * index.d.ts: the usage fixtures compile under `tsc --strict` (CommonJS and
 * ESM, every overload, every `@ts-expect-error` really an error), the misuse
 * fixture fails with exactly the expected errors, and the declared values are
 * exactly what index.js exports.
 */

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const ts = require('typescript')

const root = path.join(__dirname, '..')
const dir = path.join(__dirname, 'types')
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')

function runTsc (project) {
  const res = spawnSync(process.execPath, [tsc, '-p', path.join(dir, project), '--pretty', 'false'],
    { cwd: root, encoding: 'utf8', timeout: 120000 })
  if (res.error) throw res.error
  return res
}

/** `file(line,col): error TSnnnn` lines of tsc output, as [{file, line, code}]. */
function diagnostics (output) {
  const out = []
  for (const m of output.matchAll(/^(.+?)\((\d+),\d+\): error (TS\d+):/gm)) {
    out.push({ file: path.basename(m[1]), line: Number(m[2]), code: m[3] })
  }
  return out
}

test('typescript is a real tsc (not a preview) and strict mode is on', () => {
  assert.match(ts.version, /^[56]\./)
  for (const project of ['tsconfig.json', 'tsconfig.misuse.json']) {
    const { config } = ts.readConfigFile(path.join(dir, project), ts.sys.readFile)
    assert.equal(config.compilerOptions.strict, true, project)
    assert.equal(config.compilerOptions.noEmit, true, project)
    assert.notEqual(config.compilerOptions.skipLibCheck, true, `${project} must check index.d.ts itself`)
  }
})

test('usage fixtures (CommonJS and ESM) compile under --strict, and every @ts-expect-error is an error', () => {
  const res = runTsc('tsconfig.json')
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`)
  assert.equal(res.stdout.trim(), '')
  // An unused @ts-expect-error is itself an error (TS2578), so compiling
  // proves each one of these lines fails to type-check.
  const expectErrors = ['usage.ts', 'usage-esm.mts']
    .map((f) => fs.readFileSync(path.join(dir, f), 'utf8').match(/@ts-expect-error/g).length)
  assert.ok(expectErrors[0] >= 14, `usage.ts has ${expectErrors[0]} @ts-expect-error lines`)
  assert.ok(expectErrors[1] >= 1)
  const beyond = fs.readFileSync(path.join(dir, 'usage-beyond.ts'), 'utf8')
  assert.ok(beyond.match(/@ts-expect-error/g).length >= 6)
  for (const use of ['await using lock', 'using(', 'inspect(', 'tryAcquire(', '{ signal: ac.signal }', 'fencingToken', 'remainingMs()']) {
    assert.ok(beyond.includes(use), `usage-beyond.ts exercises ${use}`)
  }
  const usage = fs.readFileSync(path.join(dir, 'usage.ts'), 'utf8')
  for (const call of ["acquire('app:job')", "acquire('app:job', (err)", 'release()', 'release(cb)', 'extend(5000)',
    'extend(1000, (err2', 'setDefaults(null)', 'getAcquiredLocks()', 'createLock(ioredis)', 'createLock(nodeRedis',
    'createLock(legacy', "createLock('redis://", 'createLock(opts', 'tls: {']) {
    assert.ok(usage.includes(call), `usage.ts exercises ${call}`)
  }
})

test('the misuse fixture fails with exactly the marked errors', () => {
  const source = fs.readFileSync(path.join(dir, 'misuse.ts'), 'utf8').split('\n')
  const expected = []
  source.forEach((text, i) => {
    const m = /\/\/ error (TS\d+)\s*$/.exec(text)
    if (m) expected.push({ file: 'misuse.ts', line: i + 1, code: m[1] })
  })
  assert.equal(expected.length, 17)
  const res = runTsc('tsconfig.misuse.json')
  assert.equal(res.status, 2, `tsc should fail on misuse.ts:\n${res.stdout}${res.stderr}`)
  const got = diagnostics(res.stdout)
  assert.deepEqual(got, expected, res.stdout)
})

test('index.d.ts declares exactly the values index.js exports', () => {
  const file = path.join(root, 'index.d.ts')
  const program = ts.createProgram([file], { strict: true, noEmit: true, types: [] })
  const checker = program.getTypeChecker()
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(file))
  const declared = checker.getExportsOfModule(moduleSymbol)
    .filter((s) => s.flags & ts.SymbolFlags.Value)
    .map((s) => s.name).sort()
  const runtime = require('..')
  assert.deepEqual(declared, Object.keys(runtime).sort())
  // Classes are classes, functions are functions.
  for (const name of declared) {
    const symbol = checker.getExportsOfModule(moduleSymbol).find((s) => s.name === name)
    const isClass = Boolean(symbol.flags & ts.SymbolFlags.Class)
    assert.equal(typeof runtime[name], 'function', name)
    assert.equal(isClass, /^class\b/.test(Function.prototype.toString.call(runtime[name])), `${name} class-ness`)
  }
  // The declared Lock members are the runtime ones.
  const lock = runtime.createLock('redis://127.0.0.1:1')
  const lockType = checker.getDeclaredTypeOfSymbol(checker.getExportsOfModule(moduleSymbol).find((s) => s.name === 'Lock'))
  for (const prop of checker.getPropertiesOfType(lockType)) {
    // A well-known symbol member is named `__@asyncDispose@<id>`.
    const wellKnown = /^__@(\w+)@\d+$/.exec(prop.name)
    const name = wellKnown ? Symbol[wellKnown[1]] : prop.name
    assert.ok(name !== undefined && name in lock, `Lock.${prop.name} exists at runtime`)
  }
  assert.equal(typeof lock._id, 'string')
  assert.equal(lock._locked, false)
  assert.equal(lock._key, null)
  // Error names match their declared literal types.
  for (const name of ['LockAcquisitionError', 'LockReleaseError', 'LockExtendError']) {
    const err = new runtime[name]('m', { cause: 1 })
    assert.equal(err.name, name)
    assert.equal(err.cause, 1)
    assert.ok(err instanceof Error)
  }
})
