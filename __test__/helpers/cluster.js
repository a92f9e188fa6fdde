'use strict'

/**
 * A throwaway Redis Cluster for tests: `masters` primaries (and `replicas`
 * replicas each) on free ports, each with its own files in a temp dir,
 * joined with `redis-cli --cluster create`, ready once every node reports
 * `cluster_state:ok`. Stops only the servers it started, by PID.
 */

const fs = require('fs')
const os = require('os')
const path = require('path')
const { execFile } = require('child_process')
const { startRedis, freePort, askWith } = require('./redis')
const { tlsServerArgs } = require('./tls')
const { sleep } = require('./wait')

function run (cmd, args) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 30000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`))
      else resolve(stdout)
    })
  })
}

async function clusterState (ask, port) {
  return (await ask(port, 'CLUSTER', 'INFO')) || ''
}

/** The port of the node `port` believes serves `slot` (null if unknown). */
async function slotOwner (ask, port, slot) {
  const ranges = await ask(port, 'CLUSTER', 'SLOTS')
  const hit = Array.isArray(ranges) && ranges.find(([from, to]) => slot >= from && slot <= to)
  return hit ? hit[2][1] : null
}

async function startCluster (options = {}) {
  const started = []
  try {
    return await build(options, started)
  } catch (err) {
    // Nothing of ours may outlive a failed start.
    for (const n of started) await n.stop()
    throw err
  }
}

async function build ({ masters = 3, replicas = 0, password, tlsDir }, nodes) {
  // With `password`, every node requires it (and replicas use it too).
  // With `tlsDir` (helpers/tls.js certificates), nodes speak TLS only, to
  // clients and to each other.
  const ca = tlsDir ? fs.readFileSync(path.join(tlsDir, 'ca.crt'), 'utf8') : null
  const askOptions = { ...(password ? { password } : {}), ...(ca ? { tls: { ca } } : {}) }
  const ask = (port, ...command) => askWith(askOptions, port, ...command)
  const auth = password ? ['--requirepass', password, '--masterauth', password] : []
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-cluster-'))
  for (let i = 0; i < masters * (1 + replicas); i++) {
    const own = fs.mkdtempSync(path.join(dir, 'node-'))
    const port = await freePort()
    const tls = tlsDir ? [...tlsServerArgs(tlsDir, port), '--tls-cluster', 'yes', '--tls-replication', 'yes'] : []
    nodes.push(await startRedis({
      port,
      args: ['--cluster-enabled', 'yes', '--cluster-config-file', path.join(own, 'nodes.conf'),
        '--cluster-node-timeout', '1000', '--dir', own, '--repl-diskless-sync-delay', '0', ...auth, ...tls]
    }))
  }
  const cliTls = tlsDir ? ['--tls', '--cacert', path.join(tlsDir, 'ca.crt')] : []
  await run('redis-cli', [...(password ? ['-a', password, '--no-auth-warning'] : []), ...cliTls, '--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`),
    '--cluster-replicas', String(replicas), '--cluster-yes'])
  const cluster = {
    nodes,
    seeds: nodes.map((n) => `127.0.0.1:${n.port}`),
    /** Waits until every running node says cluster_state:ok. */
    async settled (timeoutMs = 20000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const states = await Promise.all(nodes.filter((n) => n.pid).map((n) => clusterState(ask, n.port)))
        if (states.every((s) => /cluster_state:ok/.test(s))) return
        if (Date.now() > deadline) throw new Error('the cluster did not settle')
        await sleep(100)
      }
    },
    /**
     * Waits until the live nodes agree that a node other than `deadPort`
     * serves `slot` (a failover done), and the cluster is ok again.
     */
    async failedOver (slot, deadPort, timeoutMs = 30000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const live = nodes.filter((n) => n.pid)
        const owners = await Promise.all(live.map((n) => slotOwner(ask, n.port, slot)))
        if (owners.every((p) => p !== null && p !== deadPort)) return cluster.settled(Math.max(1000, deadline - Date.now()))
        if (Date.now() > deadline) throw new Error(`slot ${slot} did not fail over`)
        await sleep(100)
      }
    },
    async stop () {
      for (const n of nodes) await n.stop()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  await cluster.settled()
  // Replicas in sync (a failover needs one), or the test would kill a
  // primary whose replica has nothing.
  if (replicas > 0) {
    const deadline = Date.now() + 20000
    for (;;) {
      const infos = await Promise.all(nodes.map(async (n) => (await ask(n.port, 'INFO', 'replication')) || ''))
      const up = infos.filter((i) => /master_link_status:up/.test(i)).length
      if (up === masters * replicas) break
      if (Date.now() > deadline) throw new Error(`only ${up} replicas in sync`)
      await sleep(100)
    }
  }
  return cluster
}

module.exports = { startCluster }
