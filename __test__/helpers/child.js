'use strict'

/**
 * Runs `node args…` in a child process and resolves, once it exits, to
 * `{ code, signal, stdout, stderr, ms }`; a child still running after
 * `boundMs` is killed (SIGKILL: then `signal` says so). A failure bound,
 * not a timing target.
 */

const { spawn } = require('child_process')

function runNode (args, { boundMs, env = process.env, cwd } = {}) {
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    const killer = setTimeout(() => child.kill('SIGKILL'), boundMs)
    child.on('exit', (code, signal) => {
      clearTimeout(killer)
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started })
    })
  })
}

module.exports = { runNode }
