'use strict'

/**
 * Fails (exit 1) when a relative link in the documentation does not resolve:
 * README.md and every docs/**.md.
 *
 *   node scripts/check-links.js
 *
 * Every markdown link or image `[text](path)`, `[text](path#anchor)` and
 * `[text](#anchor)` outside fenced code blocks and inline code spans must
 * name a file or directory that exists in the repository, and its `#anchor`
 * (when the target is a markdown file, the linking file itself included)
 * must be the slug of one of that file's headings, by GitHub's rules:
 * the heading's text as rendered (code spans, links and emphasis reduced to
 * their text), lowercased, with everything that is not a letter, a number,
 * a space, a hyphen or an underscore removed, spaces turned into hyphens;
 * the second heading with the same slug gets `-1`, the third `-2`, and so
 * on. Explicit `<a name="…">` / `id="…"` anchors count too. Links with a
 * scheme (`https:`, `mailto:`, …) are not checked. An anchor into a file
 * that is not markdown (e.g. `#L10` into a source file) is not checked.
 *
 * Prints each broken link as `file:line: message`, or a one-line summary.
 * Plain Node, no dependencies.
 */

const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')
const rel = (p) => path.relative(root, p).split(path.sep).join('/')

function markdownFiles () {
  const files = []
  const readme = path.join(root, 'README.md')
  if (fs.existsSync(readme)) files.push(readme)
  const walk = (dir) => {
    if (!fs.existsSync(dir)) return
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.name.endsWith('.md')) files.push(p)
    }
  }
  walk(path.join(root, 'docs'))
  return files
}

/**
 * The text with fenced code blocks blanked (their lines kept, empty), so
 * that offsets still give line numbers. Also returns, per line, whether it
 * was inside a fence (headings there are not headings).
 */
function blankFences (text) {
  const lines = text.split('\n')
  const inFence = new Array(lines.length).fill(false)
  let fence = null // { char, len }
  for (let i = 0; i < lines.length; i++) {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(lines[i])
    if (fence === null) {
      // A backtick fence's info string may not contain a backtick.
      if (m && !(m[1][0] === '`' && m[2].includes('`'))) {
        fence = { char: m[1][0], len: m[1].length }
        inFence[i] = true
        lines[i] = ''
      }
    } else {
      inFence[i] = true
      if (m && m[1][0] === fence.char && m[1].length >= fence.len && m[2].trim() === '') fence = null
      lines[i] = ''
    }
  }
  return { text: lines.join('\n'), inFence }
}

/** Inline code spans replaced by spaces (newlines kept): their brackets are not links. */
function blankCodeSpans (text) {
  return text.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (span) => span.replace(/[^\n]/g, ' '))
}

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }
function decodeEntities (s) {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (all, name) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10)
      return Number.isFinite(code) ? String.fromCodePoint(code) : all
    }
    const v = ENTITIES[name.toLowerCase()]
    return v === undefined ? all : v
  })
}

/** A heading's text as GitHub renders it: code spans, links, images and emphasis reduced to their text. */
function headingText (raw) {
  const parts = raw.split(/(`+[\s\S]*?`+)/)
  return parts.map((part, i) => {
    if (i % 2 === 1) return part.replace(/^`+ ?/, '').replace(/ ?`+$/, '')
    return decodeEntities(part
      .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
      .replace(/<[^>]+>/g, '')
      .replace(/(\*+|\b_+|_+\b)/g, (m, _, offset, s) => {
        // `*` is always markup here; `_` only where it opens or closes
        // emphasis (at a word's edge), not inside snake_case words.
        if (m[0] === '*') return ''
        const before = s[offset - 1]
        const after = s[offset + m.length]
        const wordBefore = before !== undefined && /[\p{L}\p{N}]/u.test(before)
        const wordAfter = after !== undefined && /[\p{L}\p{N}]/u.test(after)
        return wordBefore && wordAfter ? m : ''
      })
      .replace(/\\([!-/:-@[-`{-~])/g, '$1'))
  }).join('')
}

/** GitHub's slug of a heading's text (github-slugger, without the de-duplication). */
function slug (text) {
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N} _-]/gu, '').replace(/ /g, '-')
}

const anchorCache = new Map()

/** The anchors a markdown file defines: its headings' slugs (de-duplicated as GitHub does) and explicit ids. */
function anchorsOf (file) {
  if (anchorCache.has(file)) return anchorCache.get(file)
  const source = fs.readFileSync(file, 'utf8')
  const { inFence } = blankFences(source)
  const lines = source.split('\n')
  const anchors = new Set()
  const occurrences = new Map()
  const add = (text) => {
    const base = slug(headingText(text.trim()))
    let result = base
    while (occurrences.has(result)) {
      occurrences.set(base, occurrences.get(base) + 1)
      result = base + '-' + occurrences.get(base)
    }
    occurrences.set(result, 0)
    anchors.add(result)
  }
  for (let i = 0; i < lines.length; i++) {
    if (inFence[i]) continue
    const line = lines[i]
    const atx = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line)
    if (atx) {
      add(atx[1] || '')
    } else if (i + 1 < lines.length && !inFence[i + 1] && /^ {0,3}(=+|-+)[ \t]*$/.test(lines[i + 1]) &&
      line.trim() !== '' && !/^ {0,3}([|>*+-]|\d+[.)]|#)/.test(line)) {
      // A setext heading: a paragraph line underlined with = or -.
      add(line)
    }
    for (const m of line.matchAll(/<a\s[^>]*\bname=["']([^"']+)["']/gi)) anchors.add(m[1])
    for (const m of line.matchAll(/\bid=["']([^"']+)["']/gi)) anchors.add(m[1])
  }
  anchorCache.set(file, anchors)
  return anchors
}

/** Every inline link and image in `text` (fences and code spans blanked): { target, line }. */
function linksOf (text) {
  const { text: noFences } = blankFences(text)
  const clean = blankCodeSpans(noFences)
  const lineStarts = [0]
  for (let i = 0; i < clean.length; i++) if (clean[i] === '\n') lineStarts.push(i + 1)
  const lineOf = (offset) => {
    let lo = 0
    let hi = lineStarts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (lineStarts[mid] <= offset) lo = mid
      else hi = mid - 1
    }
    return lo + 1
  }
  const links = []
  // [text](target "title"): text may hold one level of brackets; the target
  // may be <wrapped>, and may hold one level of balanced parentheses.
  const re = /!?\[((?:[^[\]\\]|\\.|\[(?:[^[\]\\]|\\.)*\])*)\]\(\s*(<[^>\n]*>|(?:[^()\s\\]|\\.|\((?:[^()\s\\]|\\.)*\))*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g
  for (const m of clean.matchAll(re)) {
    let target = m[2]
    if (target.startsWith('<') && target.endsWith('>')) target = target.slice(1, -1)
    // The line where the target starts (a link's text may span lines).
    links.push({ target, line: lineOf(m.index + m[0].lastIndexOf('](') + 2) })
  }
  return links
}

function check () {
  const files = markdownFiles()
  const broken = []
  let checked = 0
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8')
    for (const { target, line } of linksOf(text)) {
      const where = `${rel(file)}:${line}`
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto:, …
      checked++
      if (target === '') {
        broken.push(`${where}: empty link target`)
        continue
      }
      const hash = target.indexOf('#')
      const rawPath = hash === -1 ? target : target.slice(0, hash)
      const rawAnchor = hash === -1 ? null : target.slice(hash + 1)
      let pathPart
      let anchor
      try {
        pathPart = decodeURIComponent(rawPath.replace(/\\(.)/g, '$1'))
        anchor = rawAnchor === null ? null : decodeURIComponent(rawAnchor)
      } catch {
        broken.push(`${where}: ${target}: not a valid URL-encoded path`)
        continue
      }
      let resolved = file
      if (pathPart !== '') {
        resolved = pathPart.startsWith('/') ? path.join(root, pathPart) : path.resolve(path.dirname(file), pathPart)
        const inside = path.relative(root, resolved)
        if (inside.startsWith('..') || path.isAbsolute(inside)) {
          broken.push(`${where}: ${target}: points outside the repository`)
          continue
        }
        if (!fs.existsSync(resolved)) {
          broken.push(`${where}: ${target}: ${rel(resolved)} does not exist`)
          continue
        }
      }
      if (anchor === null) continue
      if (anchor === '') {
        broken.push(`${where}: ${target}: empty anchor`)
        continue
      }
      if (!resolved.endsWith('.md') || !fs.statSync(resolved).isFile()) continue
      if (!anchorsOf(resolved).has(anchor)) {
        broken.push(`${where}: ${target}: no heading in ${rel(resolved)} has the anchor #${anchor}`)
      }
    }
  }
  return { files, broken, checked }
}

if (require.main === module) {
  const { files, broken, checked } = check()
  if (broken.length > 0) {
    for (const b of broken) console.log(b)
    console.log(`${broken.length} of ${checked} links in ${files.length} files do not resolve`)
    process.exit(1)
  }
  console.log(`${checked} links checked in ${files.length} files, all resolve`)
}

module.exports = { slug, headingText, anchorsOf, linksOf, check }
