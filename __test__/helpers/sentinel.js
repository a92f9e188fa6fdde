'use strict'

/**
 * A throwaway Sentinel setup for tests: a primary, one replica and three
 * sentinels watching them as `mymaster` (down after 1 s), each sentinel
 * with its own config file in a temp dir. Stops only what it started.
 */

const fs = require('fs')
const os = require('os')
const path = require('path')
const { startRedis, freePort, ask } = require('./redis')
const { sleep } = require('./wait')

async function startSentinels () {
  const started = []
  try {
    return await build(started)
  } catch (err) {
    // Nothing of ours may outlive a failed start.
    for (const s of started) await s.stop()
    throw err
  }
}

async function build (started) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redislock-rs-sentinel-'))
  const primary = await startRedis({ args: ['--dir', dir] })
  started.push(primary)
  const replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port), '--dir', fs.mkdtempSync(path.join(dir, 'r-'))] })
  started.push(replica)
  const sentinels = []
  for (let i = 0; i < 3; i++) {
    const port = await freePort()
    const conf = path.join(dir, `sentinel-${i}.conf`)
    fs.writeFileSync(conf, [
      `port ${port}`, 'bind 127.0.0.1', `dir ${dir}`,
      `sentinel monitor mymaster 127.0.0.1 ${primary.port} 2`,
      'sentinel down-after-milliseconds mymaster 1000',
      'sentinel failover-timeout mymaster 2000',
      ''
    ].join('\n'))
    const s = await startRedis({ port, args: [], sentinelConf: conf })
    started.push(s)
    sentinels.push(s)
  }
  const setup = {
    primary,
    replica,
    sentinels,
    name: 'mymaster',
    addresses: sentinels.map((s) => `127.0.0.1:${s.port}`),
    /** The port Sentinel names as the primary now (null: none answered). */
    async primaryPort () {
      for (const s of sentinels) {
        const r = await ask(s.port, 'SENTINEL', 'get-master-addr-by-name', 'mymaster')
        if (Array.isArray(r)) return Number(r[1])
      }
      return null
    },
    async stop () {
      for (const s of [...sentinels, replica, primary]) await s.stop()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  // Ready: the replica in sync, and every sentinel knows the other two.
  const deadline = Date.now() + 30000
  for (;;) {
    const info = await ask(replica.port, 'INFO', 'replication')
    const peers = await Promise.all(sentinels.map((s) => ask(s.port, 'SENTINEL', 'sentinels', 'mymaster')))
    const replicas = await ask(sentinels[0].port, 'SENTINEL', 'replicas', 'mymaster')
    if (/master_link_status:up/.test(info || '') && peers.every((p) => Array.isArray(p) && p.length === 2) &&
      Array.isArray(replicas) && replicas.length === 1) break
    if (Date.now() > deadline) throw new Error('the Sentinel setup did not come up')
    await sleep(100)
  }
  return setup
}

module.exports = { startSentinels }
