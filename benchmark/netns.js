'use strict'

/**
 * The remote-Redis scenario's server: a redis-server inside a network
 * namespace this run creates, reached over a veth pair with
 * `tc qdisc … netem delay <ms>` on both ends (a LAN-like round trip), all
 * torn down afterwards. Needs root, iproute2 and a kernel with sch_netem.
 *
 * start({delayMs}) resolves to {host, port, pid, description, stop()}, or
 * rejects with an Error whose message says why the scenario cannot run here
 * (after undoing whatever it had set up). stop() never throws.
 */

const { execFileSync, spawn } = require('child_process')
const fs = require('fs')
const net = require('net')

function sh (cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10000 })
  } catch (err) {
    if (err.code === 'ENOENT') throw new Error(`\`${cmd}\` not found (iproute2 is not installed)`)
    const why = String(err.stderr || err.message).trim().split('\n')[0]
    throw new Error(`\`${cmd} ${args.join(' ')}\` failed: ${why}`)
  }
}

function waitForPort (host, port, proc, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return reject(new Error(`redis-server in the namespace exited (${proc.exitCode})`))
      const sock = net.connect(port, host)
      sock.once('connect', () => { sock.destroy(); resolve() })
      sock.once('error', () => {
        sock.destroy()
        if (Date.now() > deadline) reject(new Error(`redis-server did not listen on ${host}:${port}`))
        else setTimeout(attempt, 50)
      })
    }
    attempt()
  })
}

function stopProcess (proc) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const hard = setTimeout(() => proc.kill('SIGKILL'), 3000)
    proc.once('exit', () => { clearTimeout(hard); resolve() })
    proc.kill('SIGTERM')
  })
}

/** Deletes namespaces left by earlier runs of this benchmark that were killed (rlbench<pid>, pid gone). */
function removeStale () {
  for (const line of sh('ip', ['netns', 'list']).split('\n')) {
    const m = /^rlbench(\d+)\b/.exec(line)
    if (!m) continue
    let alive = false
    try { alive = fs.readFileSync(`/proc/${m[1]}/cmdline`, 'utf8').includes('benchmark') } catch (_) {}
    if (!alive) { try { sh('ip', ['netns', 'del', `rlbench${m[1]}`]) } catch (_) {} }
  }
}

async function start ({ delayMs = 0.2, port = 6390 } = {}) {
  if (process.platform !== 'linux') throw new Error('needs Linux network namespaces')
  if (typeof process.getuid === 'function' && process.getuid() !== 0) throw new Error('needs root (ip netns, tc)')
  removeStale()
  const id = process.pid
  const ns = `rlbench${id}`
  const hostIf = `rlb${id}h`
  const nsIf = `rlb${id}n`
  const subnet = `10.200.${id % 250}`
  const hostAddr = `${subnet}.1`
  const nsAddr = `${subnet}.2`
  const made = { ns: false, link: false }
  let proc = null
  let stderr = ''

  async function stop () {
    await stopProcess(proc)
    proc = null
    // Deleting the namespace deletes its end of the veth pair, and with it the pair.
    if (made.ns) { try { sh('ip', ['netns', 'del', ns]) } catch (_) {} made.ns = false }
    if (made.link) {
      try { sh('ip', ['link', 'show', hostIf]); sh('ip', ['link', 'del', hostIf]) } catch (_) {}
      made.link = false
    }
  }

  try {
    sh('ip', ['netns', 'add', ns])
    made.ns = true
    sh('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf])
    made.link = true
    sh('ip', ['link', 'set', nsIf, 'netns', ns])
    sh('ip', ['addr', 'add', `${hostAddr}/30`, 'dev', hostIf])
    sh('ip', ['link', 'set', hostIf, 'up'])
    sh('ip', ['-n', ns, 'addr', 'add', `${nsAddr}/30`, 'dev', nsIf])
    sh('ip', ['-n', ns, 'link', 'set', nsIf, 'up'])
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up'])
    if (delayMs > 0) {
      try {
        sh('tc', ['qdisc', 'add', 'dev', hostIf, 'root', 'netem', 'delay', `${delayMs}ms`])
        sh('tc', ['-n', ns, 'qdisc', 'add', 'dev', nsIf, 'root', 'netem', 'delay', `${delayMs}ms`])
      } catch (err) {
        if (/qdisc kind is unknown/.test(err.message)) err.message += ' — this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM)'
        throw err
      }
    }
    // `ip netns exec` execs redis-server in place: the PID is the server's.
    proc = spawn('ip', ['netns', 'exec', ns, 'redis-server', '--port', String(port), '--bind', nsAddr,
      '--protected-mode', 'no', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], { stdio: ['ignore', 'ignore', 'pipe'] })
    proc.stderr.on('data', (d) => { stderr += d })
    proc.on('error', () => {})
    await waitForPort(nsAddr, port, proc, 10000)
  } catch (err) {
    await stop()
    throw new Error(err.message + (stderr ? ` (${stderr.trim().split('\n')[0]})` : ''))
  }
  return {
    host: nsAddr,
    port,
    pid: proc.pid,
    description: `redis-server in network namespace ${ns} at ${nsAddr}:${port}, veth ${hostIf}/${nsIf}` +
      (delayMs > 0 ? `, netem delay ${delayMs} ms each way` : ', no added delay'),
    stop
  }
}

module.exports = { start }
