'use strict'

/**
 * Fails (exit 1) when the code has an import cycle, in the Rust crate
 * (`src/`) or in the hand-written JavaScript (`lib/` and the faces' entry
 * files): a lower floor must never import a higher one (../shared/DESIGN.md).
 *
 *   node scripts/check-cycles.js [--graph]
 *
 * JavaScript: an edge per relative `require('./…')` / `import … from './…'`.
 * Rust: a file is a module (src/a/b.rs and src/a/b/mod.rs are `crate::a::b`);
 * an edge per path that names another module's item: `crate::…`, `super::…`
 * and, inside a module, `child::…` for a child module. `mod x;` declarations
 * are not edges (a parent owns its children), but a child that reaches back
 * into its parent for an item is one, and so is the parent using the child:
 * shared wiring belongs in a file of its own. Each cycle (a strongly
 * connected group of files) is printed with the edges that make it.
 */

const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')
const rel = (p) => path.relative(root, p)

function walk (dir, ext, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) walk(p, ext, out)
    else if (e.name.endsWith(ext)) out.push(p)
  }
  return out
}

/** Strips comments and string literals' contents (Rust and JS alike, roughly). */
function code (text) {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/[^\n]*/g, '')
    .replace(/"(?:[^"\\\n]|\\.)*"/g, '""')
}

function jsGraph () {
  const files = [
    ...walk(path.join(root, 'lib'), '.js'),
    ...fs.readdirSync(root).filter((f) => /\.(js|mjs)$/.test(f) && f !== 'binding.js').map((f) => path.join(root, f))
  ]
  const graph = new Map()
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8')
    const deps = new Set()
    const re = /(?:require\(\s*|from\s+|import\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g
    for (const m of text.matchAll(re)) {
      const target = resolveJs(path.dirname(file), m[1])
      if (target && target !== file) deps.add(target)
    }
    graph.set(file, deps)
  }
  return graph
}

function resolveJs (dir, spec) {
  const base = path.resolve(dir, spec)
  for (const candidate of [base, base + '.js', base + '.mjs', path.join(base, 'index.js')]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate
  }
  return null
}

function rustGraph () {
  const src = path.join(root, 'src')
  const modules = new Map() // 'a::b' -> file
  const fileMod = new Map()
  for (const file of walk(src, '.rs')) {
    const parts = path.relative(src, file).replace(/\.rs$/, '').split(path.sep)
    if (parts[parts.length - 1] === 'mod' || parts[parts.length - 1] === 'lib') parts.pop()
    const name = parts.join('::')
    modules.set(name, file)
    fileMod.set(file, name)
  }
  /** The longest module prefix of `segments`. */
  const moduleOf = (segments) => {
    for (let n = segments.length; n >= 0; n--) {
      const name = segments.slice(0, n).join('::')
      if (modules.has(name)) return name
    }
    return null
  }
  const graph = new Map()
  for (const [name, file] of modules) {
    const here = name === '' ? [] : name.split('::')
    // A file's unit tests (its trailing `#[cfg(test)] mod tests`) are not
    // part of the layering: their `use super::*` names the file itself.
    const text = code(fs.readFileSync(file, 'utf8')).replace(/#\[cfg\(test\)\]\s*mod\s+tests\s*\{[\s\S]*$/, '')
    const deps = new Set()
    const add = (segments) => {
      if (segments.length === 0) return // an extern crate's path: no edge
      const target = moduleOf(segments)
      if (target !== null && target !== name) deps.add(modules.get(target))
    }
    // Paths in `use` trees are expanded one level: `use crate::a::{b, c::d}`.
    for (const m of text.matchAll(/\buse\s+([^;]+);/g)) {
      for (const p of expandUse(m[1].replace(/\s+/g, ''))) add(absolute(p, here, modules))
    }
    for (const m of text.matchAll(/(?<![\w:])((?:crate|super|self)(?:::\w+)+)/g)) {
      add(absolute(m[1], here, modules))
    }
    // `child::item` inside a module, for a child module of it.
    for (const m of text.matchAll(/(?<![\w:])([a-z_]\w*)::(\w+)/g)) {
      const child = [...here, m[1]].join('::')
      if (modules.has(child)) add([...here, m[1], m[2]])
    }
    graph.set(file, deps)
  }
  return graph
}

/** `crate::a::{b, c::{d, e}}` -> ['crate::a::b', 'crate::a::c::d', 'crate::a::c::e']. */
function expandUse (tree) {
  const open = tree.indexOf('{')
  if (open < 0) return [tree.replace(/\bas\b.*$/, '')]
  const prefix = tree.slice(0, open)
  const inner = tree.slice(open + 1, tree.lastIndexOf('}'))
  const parts = []
  let depth = 0
  let start = 0
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === '{') depth++
    else if (inner[i] === '}') depth--
    else if (inner[i] === ',' && depth === 0) {
      parts.push(inner.slice(start, i))
      start = i + 1
    }
  }
  parts.push(inner.slice(start))
  return parts.filter(Boolean).flatMap((p) => expandUse(prefix + p))
}

/** A path as segments from the crate root, seen from module `here`. */
function absolute (p, here, modules) {
  const segs = p.split('::').filter(Boolean)
  if (segs[0] === 'crate') return segs.slice(1)
  let at = [...here]
  let i = 0
  if (segs[0] === 'self') i = 1
  while (segs[i] === 'super') { at = at.slice(0, -1); i++ }
  if (i === 0) {
    // A bare path: a child module of this one, or an extern crate (no edge).
    return modules.has([...here, segs[0]].join('::')) ? [...here, ...segs] : []
  }
  return [...at, ...segs.slice(i)]
}

/** Strongly connected groups of more than one file (Tarjan). */
function cycles (graph) {
  let index = 0
  const stack = []
  const on = new Set()
  const idx = new Map()
  const low = new Map()
  const out = []
  const visit = (v) => {
    idx.set(v, index); low.set(v, index); index++
    stack.push(v); on.add(v)
    for (const w of graph.get(v) || []) {
      if (!graph.has(w)) continue
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))) } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)))
    }
    if (low.get(v) === idx.get(v)) {
      const group = []
      let w
      do { w = stack.pop(); on.delete(w); group.push(w) } while (w !== v)
      if (group.length > 1) out.push(group)
    }
  }
  for (const v of graph.keys()) if (!idx.has(v)) visit(v)
  return out
}

let failed = false
for (const [what, graph] of [['Rust (src/)', rustGraph()], ['JavaScript (lib/, faces)', jsGraph()]]) {
  const found = cycles(graph)
  const edges = [...graph.values()].reduce((n, d) => n + d.size, 0)
  if (process.argv.includes('--graph')) {
    for (const [f, deps] of graph) console.log(`${rel(f)} -> ${[...deps].map(rel).join(', ')}`)
  }
  if (found.length === 0) {
    console.log(`check-cycles: ${what}: ${graph.size} files, ${edges} imports, no cycle`)
    continue
  }
  failed = true
  console.log(`check-cycles: ${what}: ${found.length} import cycle(s):`)
  for (const group of found) {
    const inGroup = new Set(group)
    console.log(`  - ${group.map(rel).sort().join(', ')}`)
    for (const f of group) {
      const back = [...graph.get(f)].filter((d) => inGroup.has(d))
      console.log(`      ${rel(f)} imports ${back.map(rel).join(', ')}`)
    }
  }
}
process.exit(failed ? 1 : 0)
