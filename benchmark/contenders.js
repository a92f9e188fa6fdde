'use strict'

/**
 * The contenders. Each one, in its own process (child.js), opens ONE Redis
 * connection that all of its workers share, and hands out workers whose
 * `cycle()` does one acquire + release (uncontended) or acquire-with-retries,
 * a critical section and a release (contended).
 *
 * A contender is {id, label, js, env, open({host, port})}: `js` marks the
 * JavaScript libraries the targets compare against, `env` is added to the
 * child's environment, and open resolves to
 * { worker(key), contended(key, {delay, csMs}), waiter(key, {delay}), close() }.
 * waiter(key, {delay}) is one lock object that waits as long as it takes,
 * retrying every `delay` ms with the library's own mechanism, for the
 * handoff scenario (child.js, mode 'handoff'): { acquire() resolving true,
 * release() }. The quorum section's contenders (QUORUM) get
 * open({host, port, servers}), `servers` being every server's {host, port},
 * open one connection per server (shared by all workers) and have
 * worker(key) only. So do the cluster section's (CLUSTER), `servers` being
 * the cluster's primaries, used as seed nodes for one cluster client. The
 * redlock-face section's (REDLOCK_FACE) get open({host, port, servers}) too,
 * one server or several, and have worker(key) and contended(key, ...). The
 * semaphore-face section's (SEMAPHORE_FACE), one per lock kind (`kind`),
 * get open({host, port}) and have worker(key) and contended(key, ...).
 * The web-locks section's (WEB_LOCKS, webLocks) get open({host, port}) and
 * have worker(key), waiter(key, ...) and rw(key, ...).
 */

const { randomUUID } = require('crypto')
const { setTimeout: sleep } = require('timers/promises')

const TTL = 10000
const DEL_IF_EQUAL = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nend\nreturn 0"

const version = (pkg) => { try { return require(`${pkg}/package.json`).version } catch (_) { return '?' } }

function ioredisClient ({ host, port }, extra = {}) {
  const Redis = require('ioredis')
  const client = new Redis({ host, port, lazyConnect: true, maxRetriesPerRequest: 1, ...extra })
  return client.connect().then(() => client)
}

function closeIoredis (client) {
  return client.quit().catch(() => client.disconnect())
}

/** A lock with redislock's interface (acquire(key), release()) as workers. */
function lockWorkers (makeLock) {
  return {
    worker (key) {
      const lock = makeLock({ retries: 0, delay: 50 })
      return { cycle: () => lock.acquire(key).then(() => lock.release()) }
    },
    contended (key, { delay, csMs }) {
      const lock = makeLock({ retries: -1, delay })
      return {
        async cycle () {
          await lock.acquire(key)
          await sleep(csMs)
          await lock.release()
        }
      }
    },
    waiter (key, { delay }) {
      const lock = makeLock({ retries: -1, delay })
      return { acquire: () => lock.acquire(key).then(() => true), release: () => lock.release() }
    }
  }
}

/**
 * redislock-rs, this package, with the engine `engine` ('js' or 'tokio');
 * `extra`: more createLock options for every lock it makes (holders and
 * waiters alike), e.g. { wakeOnRelease: true }.
 */
function redislockRs (id, engine, label, extra = {}) {
  return {
    id,
    label,
    js: false,
    engine,
    env: { REDISLOCK_RS_ENGINE: engine },
    async open ({ host, port }) {
      const lib = require('..')
      const make = (o) => lib.createLock({ host, port }, { timeout: TTL, ...extra, ...o })
      // Connect once outside the measurements.
      const probe = make({ retries: 0 })
      await probe.acquire(`bench:rs:probe:${process.pid}`)
      await probe.release()
      return { ...lockWorkers(make), close: async () => {} }
    }
  }
}

/** redislock 1.3.0 over a node_redis v3 client (what it was written for). */
const redislock = {
  id: 'redislock',
  label: 'redislock@1.3.0 (redis@3)',
  js: true,
  async open ({ host, port }) {
    const redis3 = require('redis3')
    const client = redis3.createClient({ host, port })
    await new Promise((resolve, reject) => { client.once('ready', resolve); client.once('error', reject) })
    const lib = require('redislock')
    const make = (o) => lib.createLock(client, { timeout: TTL, ...o })
    return { ...lockWorkers(make), close: () => new Promise((resolve) => client.quit(() => resolve())) }
  }
}

/** redlock (latest), single instance, with ioredis. */
const redlock = {
  id: 'redlock',
  label: `redlock@${version('redlock')} (ioredis, 1 instance)`,
  js: true,
  async open (target) {
    const client = await ioredisClient(target)
    const Redlock = require('redlock')
    const plain = new Redlock([client], { retryCount: 10, retryDelay: 50, retryJitter: 0 })
    plain.on('clientError', () => {})
    const waiters = new Map() // retry delay -> one Redlock shared by the workers
    const waiting = (delay) => {
      let rl = waiters.get(delay)
      if (!rl) {
        rl = new Redlock([client], { retryCount: -1, retryDelay: delay, retryJitter: 0 })
        rl.on('clientError', () => {})
        waiters.set(delay, rl)
      }
      return rl
    }
    return {
      worker (key) {
        return { cycle: () => plain.lock(key, TTL).then((l) => l.unlock()) }
      },
      waiter (key, { delay }) {
        const rl = waiting(delay)
        let held = null
        return {
          acquire: () => rl.lock(key, TTL).then((l) => { held = l; return true }),
          release: () => { const l = held; held = null; return l.unlock() }
        }
      },
      contended (key, { delay, csMs }) {
        const rl = waiting(delay)
        return {
          async cycle () {
            const l = await rl.lock(key, TTL)
            await sleep(csMs)
            await l.unlock()
          }
        }
      },
      close: () => closeIoredis(client)
    }
  }
}

/** redis-semaphore's Mutex with ioredis (auto-refresh off, like redislock). */
const semaphore = {
  id: 'redis-semaphore',
  label: `redis-semaphore@${version('redis-semaphore')} Mutex (ioredis)`,
  js: true,
  async open (target) {
    const client = await ioredisClient(target)
    const { Mutex } = require('redis-semaphore')
    return {
      worker (key) {
        const m = new Mutex(client, key, { lockTimeout: TTL, acquireAttemptsLimit: 1, refreshInterval: 0 })
        return { cycle: () => m.acquire().then(() => m.release()) }
      },
      contended (key, { delay, csMs }) {
        const m = new Mutex(client, key, { lockTimeout: TTL, acquireTimeout: 600000, retryInterval: delay, refreshInterval: 0 })
        return {
          async cycle () {
            await m.acquire()
            await sleep(csMs)
            await m.release()
          }
        }
      },
      waiter (key, { delay }) {
        const m = new Mutex(client, key, { lockTimeout: TTL, acquireTimeout: 600000, retryInterval: delay, refreshInterval: 0 })
        return { acquire: () => m.acquire().then(() => true), release: () => m.release() }
      },
      close: () => closeIoredis(client)
    }
  }
}

/**
 * The JavaScript floor: what any Redis lock must do, written directly on
 * ioredis: SET key token PX ttl NX, then EVALSHA compare-and-delete.
 */
function rawIoredis (id, label, extra) {
  return {
    id,
    label,
    js: true,
    async open (target) {
      const client = await ioredisClient(target, extra)
      const sha = await client.script('LOAD', DEL_IF_EQUAL)
      return {
        worker (key) {
          const token = randomUUID()
          return {
            async cycle () {
              if (await client.set(key, token, 'PX', TTL, 'NX') !== 'OK') throw new Error(`${id}: lock held`)
              await client.evalsha(sha, 1, key, token)
            }
          }
        },
        contended (key, { delay, csMs }) {
          const token = randomUUID()
          return {
            async cycle () {
              while (await client.set(key, token, 'PX', TTL, 'NX') !== 'OK') await sleep(delay)
              await sleep(csMs)
              await client.evalsha(sha, 1, key, token)
            }
          }
        },
        close: () => closeIoredis(client)
      }
    }
  }
}

/**
 * The Redisson face (not among issue 9's contenders): redislock-rs/redisson
 * and node-redisson 1.0.4, the package it replaces. Same interface as above,
 * plus waiter(key): one lock object (so its own random clientId) that waits
 * as long as it takes, for the handoff scenario (child.js, mode 'handoff').
 * One Redisson instance per process, shared by all workers.
 */
function redissonFace (id, label, pkg, env) {
  return {
    id,
    label,
    js: pkg !== '../redisson',
    engine: env ? env.REDISLOCK_RS_ENGINE : undefined,
    env,
    async open ({ host, port }) {
      // node-redisson adds one listener per waiting lock to one EventEmitter;
      // 16 waiters trip Node's "possible EventEmitter memory leak" warning
      // (limit 10) on every wait, which would flood the harness's stderr.
      if (pkg === 'node-redisson') require('events').defaultMaxListeners = 0
      const { Redisson } = require(pkg)
      const redisson = new Redisson({ redis: { options: { host, port } } })
      // Connect once outside the measurements.
      const probe = redisson.getLock(`bench:redisson:probe:${id}:${process.pid}`)
      if (!await probe.tryLock(0, TTL)) throw new Error(`${id}: probe lock held`)
      await probe.unlock()
      return {
        worker (key) {
          const lock = redisson.getLock(key)
          return {
            async cycle () {
              if (!await lock.tryLock(0, TTL)) throw new Error(`${id}: lock ${key} held`)
              await lock.unlock()
            }
          }
        },
        waiter (key) {
          const lock = redisson.getLock(key)
          return { acquire: () => lock.tryLock(false, TTL), release: () => lock.unlock() }
        },
        close: () => redisson.quit()
      }
    }
  }
}

/**
 * Java Redisson's synchronizers on the Redisson face (the redisson-sync
 * section, issue 23): one `new Redisson(...)` per process, shared by all
 * workers, as redissonFace. `kind` says which object a worker uses:
 * - 'lock' (getLock), 'read' (getReadWriteLock(name).readLock()), 'write'
 *   (….writeLock()), 'fair' (getFairLock): worker(key) loops
 *   `tryLock(0, 10000)` + `unlock()` on its own name (uncontended, as the
 *   redisson section); waiter(key): one lock object (its own random
 *   clientId) that waits forever, `tryLock(false, 10000)`, for the handoff
 *   mode; 'lock' and 'rw' (below) give rw(key, {readers, csMs}).
 * - 'rw' (getReadWriteLock) and 'lock' (getLock, the exclusive baseline):
 *   rw(key, {readers, csMs}) → { readers, writer }: `readers` workers each
 *   looping `readLock().lock(10000)` + `unlock()` (the baseline: getLock),
 *   one writer looping `writeLock().lock(10000)`, a `csMs` critical
 *   section, `unlock()`; each worker its own object (its own clientId), all
 *   on ONE name (child.js, mode 'rw').
 * - 'semaphore' (getSemaphore) and 'pes' (getPermitExpirableSemaphore):
 *   shared(key, {workers, limit}) → `workers` workers on ONE semaphore
 *   whose permits were set to `limit` (trySetPermits, before the clock),
 *   each looping `acquire()` + `release()` (pes: `acquire(10000)` → id,
 *   `release(id)`) (child.js, mode 'shared').
 * node-redisson (kind 'lock' only) is redissonFace's contender.
 */
function redissonSync (id, label, kind) {
  return {
    id,
    label,
    js: false,
    kind,
    engine: 'js',
    env: { REDISLOCK_RS_ENGINE: 'js' },
    async open ({ host, port }) {
      const { Redisson } = require('../redisson')
      const redisson = new Redisson({ redis: { options: { host, port } } })
      const lockOf = (key) => kind === 'read' ? redisson.getReadWriteLock(key).readLock()
        : kind === 'write' || kind === 'rw' ? redisson.getReadWriteLock(key).writeLock()
          : kind === 'fair' ? redisson.getFairLock(key)
            : redisson.getLock(key)
      // Connect once outside the measurements.
      const probe = lockOf(`bench:redisson-sync:probe:${id}:${process.pid}`)
      if (!await probe.tryLock(0, TTL)) throw new Error(`${id}: probe lock held`)
      await probe.unlock()
      const looping = (lock, csMs) => ({
        async cycle () {
          await lock.lock(TTL)
          if (csMs) await sleep(csMs)
          await lock.unlock()
        }
      })
      return {
        worker (key) {
          const lock = lockOf(key)
          return {
            async cycle () {
              if (!await lock.tryLock(0, TTL)) throw new Error(`${id}: lock ${key} held`)
              await lock.unlock()
            }
          }
        },
        waiter (key) {
          const lock = lockOf(key)
          return { acquire: () => lock.tryLock(false, TTL), release: () => lock.unlock() }
        },
        rw (key, { readers, csMs }) {
          const reader = () => kind === 'rw' ? redisson.getReadWriteLock(key).readLock() : redisson.getLock(key)
          return {
            readers: Array.from({ length: readers }, () => looping(reader())),
            writer: looping(lockOf(key), csMs)
          }
        },
        async shared (key, { workers, limit }) {
          const sem = kind === 'pes' ? redisson.getPermitExpirableSemaphore(key) : redisson.getSemaphore(key)
          if (!await sem.trySetPermits(limit)) throw new Error(`${id}: ${key} had its permits set already`)
          return Array.from({ length: workers }, () => kind === 'pes'
            ? { cycle: () => sem.acquire(TTL).then((permit) => sem.release(permit)) }
            : { cycle: () => sem.acquire().then(() => sem.release()) })
        },
        close: () => redisson.quit()
      }
    }
  }
}

/**
 * A redis-semaphore 5.8 `Semaphore` (`pkg`: 'redis-semaphore', or
 * '../semaphore', this package's face) shared by many workers (the
 * redisson-sync section, as the Redisson RSemaphore's peer): one ioredis
 * client, shared(key, {workers, limit}) → `workers` workers on ONE key,
 * each cycle a new `Semaphore(client, key, limit, { refreshInterval: 0,
 * retryInterval: 10 })` (acquireTimeout at its default, 10 s), `acquire()`
 * + `release()` (child.js, mode 'shared').
 */
function semaphoreShared (id, label, pkg, engine) {
  return {
    id,
    label,
    js: pkg === 'redis-semaphore',
    engine,
    env: engine ? { REDISLOCK_RS_ENGINE: engine } : undefined,
    async open (target) {
      const client = await ioredisClient(target)
      const { Semaphore } = require(pkg)
      const make = (key, limit) => new Semaphore(client, key, limit, { refreshInterval: 0, retryInterval: 10 })
      // Connect once outside the measurements (ours opens its own connection).
      const probe = make(`bench:redisson-sync:probe:${id}:${process.pid}`, 1)
      await probe.acquire()
      await probe.release()
      return {
        async shared (key, { workers, limit }) {
          return Array.from({ length: workers }, () => ({
            async cycle () {
              const sem = make(key, limit)
              await sem.acquire()
              await sem.release()
            }
          }))
        },
        close: () => closeIoredis(client)
      }
    }
  }
}

/**
 * The redisson-sync section's contenders, by part: read-write lock under
 * load (RW: ours vs the same workers on getLock), uncontended locks per
 * kind (SYNC_LOCKS, with node-redisson's getLock for reference), the fair
 * lock's handoff (FAIR: fair vs getLock), semaphores shared by many workers
 * (SHARED; 'redisson-rs-pes' at 16 workers only).
 */
const SYNC_RW = [
  redissonSync('redisson-rs-rw', 'redislock-rs/redisson getReadWriteLock (16 readers + 1 writer), JS-thread engine', 'rw'),
  redissonSync('redisson-rs-rw-exclusive', 'redislock-rs/redisson getLock, the same 17 workers (exclusive baseline), JS-thread engine', 'lock')
]
const SYNC_LOCKS = [
  redissonSync('redisson-rs-read', 'redislock-rs/redisson read lock, JS-thread engine', 'read'),
  redissonSync('redisson-rs-write', 'redislock-rs/redisson write lock, JS-thread engine', 'write'),
  redissonSync('redisson-rs-lock', 'redislock-rs/redisson getLock, JS-thread engine', 'lock')
]
const SYNC_FAIR = [
  redissonSync('redisson-rs-fair', 'redislock-rs/redisson getFairLock, JS-thread engine', 'fair'),
  redissonSync('redisson-rs-lock-handoff', 'redislock-rs/redisson getLock (not fair), JS-thread engine', 'lock')
]
const SYNC_SHARED = [
  redissonSync('redisson-rs-semaphore', 'redislock-rs/redisson getSemaphore, JS-thread engine', 'semaphore'),
  semaphoreShared('redis-semaphore-shared', `redis-semaphore@${version('redis-semaphore')} Semaphore (ioredis@${version('ioredis')} client)`, 'redis-semaphore'),
  semaphoreShared('redislock-rs-semaphore-shared', `redislock-rs/semaphore Semaphore, JS-thread engine (ioredis@${version('ioredis')} client)`, '../semaphore', 'js'),
  redissonSync('redisson-rs-pes', 'redislock-rs/redisson getPermitExpirableSemaphore, lease 10 s, JS-thread engine', 'pes')
]

/**
 * Redlock on several independent servers (the quorum section, not among
 * issue 9's contenders): open({ servers }) gets every server's
 * { host, port }, and workers hold one lock on a majority of them.
 * redislock-rs: `createLock([s1, s2, s3], { timeout: 10000, retries: 0 })`
 * per worker, every lock given the same connection-options objects.
 */
function redislockRsQuorum (id, engine, label) {
  return {
    id,
    label,
    js: false,
    engine,
    env: { REDISLOCK_RS_ENGINE: engine },
    async open ({ servers }) {
      const lib = require('..')
      const where = servers.map(({ host, port }) => ({ host, port }))
      const make = () => lib.createLock(where, { timeout: TTL, retries: 0 })
      // Connect to every server once outside the measurements.
      const probe = make()
      await probe.acquire(`bench:rs-quorum:probe:${process.pid}`)
      await probe.release()
      return {
        worker (key) {
          const lock = make()
          return { cycle: () => lock.acquire(key).then(() => lock.release()) }
        },
        close: async () => {}
      }
    }
  }
}

/**
 * A redlock 4.2.0 `Redlock` class (`pkg`: 'redlock', or '../redlock', this
 * package's node-redlock face) on several servers, or one: one ioredis
 * client per server (open({ servers })), one Redlock shared by the workers
 * (retryCount 0, retryJitter 0), `lock(key, 10000)` then `unlock()`; and for
 * the contended mode one Redlock per retry delay (retryCount -1, retryDelay
 * `delay`, retryJitter 0), shared by the workers too. The same code for both
 * packages, so the two differ by the class only.
 */
function redlockOn (id, label, pkg, engine) {
  return {
    id,
    label,
    js: pkg === 'redlock',
    engine,
    env: engine ? { REDISLOCK_RS_ENGINE: engine } : undefined,
    async open ({ servers }) {
      const clients = []
      try {
        for (const s of servers) clients.push(await ioredisClient(s))
      } catch (err) {
        await Promise.all(clients.map(closeIoredis))
        throw err
      }
      const Redlock = require(pkg)
      const make = (o) => {
        const rl = new Redlock(clients, { retryJitter: 0, ...o })
        rl.on('clientError', () => {})
        return rl
      }
      const rl = make({ retryCount: 0 })
      // Connect once outside the measurements (ours opens its own connections).
      await rl.lock(`bench:redlock:probe:${id}:${process.pid}`, TTL).then((l) => l.unlock())
      const waiters = new Map() // retry delay -> one Redlock shared by the workers
      const waiting = (delay) => {
        if (!waiters.has(delay)) waiters.set(delay, make({ retryCount: -1, retryDelay: delay }))
        return waiters.get(delay)
      }
      return {
        worker (key) {
          return { cycle: () => rl.lock(key, TTL).then((l) => l.unlock()) }
        },
        contended (key, { delay, csMs }) {
          const w = waiting(delay)
          return {
            async cycle () {
              const l = await w.lock(key, TTL)
              await sleep(csMs)
              await l.unlock()
            }
          }
        },
        close: () => Promise.all(clients.map(closeIoredis))
      }
    }
  }
}

/** node-redlock on several servers: one ioredis client per server, one Redlock shared by the workers. */
const redlockQuorum = redlockOn('redlock-quorum', `redlock@${version('redlock')} (ioredis@${version('ioredis')}, one client per server)`, 'redlock')

/** The quorum section's contenders, in this order. */
const QUORUM = [
  redislockRsQuorum('redislock-rs-quorum', 'js', 'redislock-rs Redlock, JS-thread engine'),
  redislockRsQuorum('redislock-rs-quorum-tokio', 'tokio', 'redislock-rs Redlock, tokio engine'),
  redlockQuorum
]

/**
 * Redis Cluster (the cluster section, not among issue 9's contenders):
 * open({ servers }) gets the primaries' { host, port } as seed nodes, and
 * every contender opens ONE cluster client (a connection per primary),
 * shared by all its workers. Workers are on keys of their own, so their
 * locks spread over the slots (and primaries).
 */
function ioredisCluster (servers) {
  const { Cluster } = require('ioredis')
  const client = new Cluster(servers.map(({ host, port }) => ({ host, port })), { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 1 } })
  return client.connect().then(() => client)
}

/**
 * redislock-rs: `createLock({ cluster: [url, ...] }, { timeout: 10000,
 * retries: 0 })` per worker, the same options object for every lock, so one
 * cluster client. No REDISLOCK_RS_ENGINE: a cluster always goes to the
 * tokio engine (lib/common/targets.js), whatever the default engine is.
 */
const redislockRsCluster = {
  id: 'redislock-rs-cluster',
  label: 'redislock-rs, `{ cluster: [url, …] }` (tokio engine, the redis crate\'s cluster client)',
  js: false,
  async open ({ servers }) {
    const lib = require('..')
    const where = { cluster: servers.map(({ host, port }) => `redis://${host}:${port}`) }
    const make = (o) => lib.createLock(where, { timeout: TTL, ...o })
    // Connect to the cluster once outside the measurements.
    const probe = make({ retries: 0 })
    await probe.acquire(`bench:rs-cluster:probe:${process.pid}`)
    await probe.release()
    return { ...lockWorkers(make), close: async () => {} }
  }
}

/**
 * redislock 1.3.0 on an ioredis Cluster: it only needs `set(key, id, 'PX',
 * ttl, 'NX', cb)` and `evalsha([sha, 1, key, id], cb)` (EVAL on NOSCRIPT,
 * through ioredis's `send_command` alias), each on one key, which the
 * Cluster client routes by slot.
 */
const redislockCluster = {
  id: 'redislock-cluster',
  label: `redislock@${version('redislock')} (ioredis@${version('ioredis')} Cluster)`,
  js: true,
  async open ({ servers }) {
    const client = await ioredisCluster(servers)
    const lib = require('redislock')
    const make = (o) => lib.createLock(client, { timeout: TTL, ...o })
    return { ...lockWorkers(make), close: () => closeIoredis(client) }
  }
}

/** node-redlock with one ioredis Cluster client as its only "server". */
const redlockCluster = {
  id: 'redlock-cluster',
  label: `redlock@${version('redlock')} (ioredis@${version('ioredis')} Cluster, as its one client)`,
  js: true,
  async open ({ servers }) {
    const client = await ioredisCluster(servers)
    const Redlock = require('redlock')
    const rl = new Redlock([client], { retryCount: 0, retryJitter: 0 })
    rl.on('clientError', () => {})
    return {
      worker (key) {
        return { cycle: () => rl.lock(key, TTL).then((l) => l.unlock()) }
      },
      close: () => closeIoredis(client)
    }
  }
}

/** The cluster section's contenders, in this order. */
const CLUSTER = [redislockRsCluster, redlockCluster, redislockCluster]

/**
 * Wake on release (the redislock face): redislock-rs with and without
 * `wakeOnRelease: true`, against the JavaScript peers, each waiting with its
 * own retry mechanism (child.js, mode 'handoff', `waiter(key, {delay})`).
 */
const RS_WAKE = redislockRs('redislock-rs-wake', 'js', 'redislock-rs, JS-thread engine, wakeOnRelease: true', { wakeOnRelease: true })

const REDISSON = [
  redissonFace('redisson-rs', 'redislock-rs/redisson, JS-thread engine', '../redisson', { REDISLOCK_RS_ENGINE: 'js' }),
  redissonFace('node-redisson', `node-redisson@${version('node-redisson')} (ioredis@${version('ioredis')}, pubsub)`, 'node-redisson')
]

const RS_PLAIN = redislockRs('redislock-rs', 'js', 'redislock-rs, JS-thread engine')
const ALL = [
  RS_PLAIN,
  redislockRs('redislock-rs-tokio', 'tokio', 'redislock-rs, tokio engine'),
  redislock,
  redlock,
  semaphore,
  rawIoredis('js-floor', 'JS floor: raw ioredis SET NX + EVALSHA'),
  rawIoredis('js-floor-autopipe', 'raw ioredis, enableAutoPipelining', { enableAutoPipelining: true })
]

/**
 * The node-redlock face (the redlock-face section, issue 20): this
 * package's `require('redislock-rs/redlock')` on both engines against the
 * real redlock 4.2.0 (redlockQuorum: the same harness code, redlockOn), each
 * with one ioredis client per server, on one server and on several.
 */
const REDLOCK_FACE = [
  redlockOn('redislock-rs-redlock', `redislock-rs/redlock, JS-thread engine (ioredis@${version('ioredis')} clients, one per server)`, '../redlock', 'js'),
  redlockOn('redislock-rs-redlock-tokio', `redislock-rs/redlock, tokio engine (ioredis@${version('ioredis')} clients, one per server)`, '../redlock', 'tokio'),
  redlockQuorum
]

/**
 * The redis-semaphore face (the semaphore-face section): `pkg` ('redis-semaphore',
 * or '../semaphore', this package's face) with one ioredis client (ours
 * reads the client's options and opens its own connection; the client
 * stays open, unused, as a user's would), lock kind `kind`: 'mutex'
 * (`new Mutex(client, key, { refreshInterval: 0 })`) or 'semaphore'
 * (`new Semaphore(client, key, 5, { refreshInterval: 0 })`). A NEW lock
 * object per cycle, as redis-semaphore's users construct one per use:
 * `const m = new Mutex(...); await m.acquire(); await m.release()`. The
 * same code for both packages, so the two differ by the classes only.
 * contended(key, {delay, csMs}): the same per cycle with `acquireTimeout:
 * 600000, retryInterval: delay`, a `csMs` critical section.
 */
const SEMAPHORE_LIMIT = 5
function semaphoreOn (id, label, pkg, kind, engine) {
  return {
    id,
    label,
    js: pkg === 'redis-semaphore',
    kind,
    engine,
    env: engine ? { REDISLOCK_RS_ENGINE: engine } : undefined,
    async open (target) {
      const client = await ioredisClient(target)
      const { Mutex, Semaphore } = require(pkg)
      const make = kind === 'mutex'
        ? (key, o) => new Mutex(client, key, { refreshInterval: 0, ...o })
        : (key, o) => new Semaphore(client, key, SEMAPHORE_LIMIT, { refreshInterval: 0, ...o })
      // Connect once outside the measurements (ours opens its own connection).
      const probe = make(`bench:semaphore-face:probe:${id}:${process.pid}`)
      await probe.acquire()
      await probe.release()
      return {
        worker (key) {
          return {
            async cycle () {
              const lock = make(key)
              await lock.acquire()
              await lock.release()
            }
          }
        },
        contended (key, { delay, csMs }) {
          return {
            async cycle () {
              const lock = make(key, { acquireTimeout: 600000, retryInterval: delay })
              await lock.acquire()
              await sleep(csMs)
              await lock.release()
            }
          }
        },
        close: () => closeIoredis(client)
      }
    }
  }
}

/**
 * The redis-semaphore face (the semaphore-face section): per lock kind,
 * this package's `require('redislock-rs/semaphore')` on both engines
 * against the real redis-semaphore 5.8.0, the same harness code
 * (semaphoreOn), on the main redis-server.
 */
const SEMAPHORE_FACE = ['mutex', 'semaphore'].flatMap((kind) => {
  const what = kind === 'mutex' ? 'Mutex' : `Semaphore (limit ${SEMAPHORE_LIMIT})`
  const client = `ioredis@${version('ioredis')} client`
  return [
    semaphoreOn(`redislock-rs-semaphore-${kind}`, `redislock-rs/semaphore ${what}, JS-thread engine (${client})`, '../semaphore', kind, 'js'),
    semaphoreOn(`redislock-rs-semaphore-${kind}-tokio`, `redislock-rs/semaphore ${what}, tokio engine (${client})`, '../semaphore', kind, 'tokio'),
    semaphoreOn(`redis-semaphore-${kind}`, `redis-semaphore@${version('redis-semaphore')} ${what} (${client})`, 'redis-semaphore', kind)
  ]
})

/**
 * Valkey 9 (the valkey section, issue 35): redislock-rs on a valkey-server
 * of its own, once on the Lua-free path (release `DELIFEQ key token`; the
 * server has the commands, so it is the default: REDISLOCK_RS_LUA_FREE=1
 * only keeps a REDISLOCK_RS_LUA_FREE=0 in the harness's own environment
 * from reaching the child) and once on the scripted path
 * (REDISLOCK_RS_LUA_FREE=0: EVALSHA, as on Redis 7), both on the JS-thread
 * engine; against the JavaScript contenders of the uncontended section (the
 * same objects, ALL's `js` ones), which run their Lua scripts on Valkey too.
 */
function redislockRsValkey (id, luaFree, label) {
  const c = redislockRs(id, 'js', label)
  c.env = { ...c.env, REDISLOCK_RS_LUA_FREE: luaFree ? '1' : '0' }
  return c
}
const VALKEY = [
  redislockRsValkey('redislock-rs-valkey-luafree', true, 'redislock-rs on Valkey, Lua-free (SET NX PX + DELIFEQ), JS-thread engine'),
  redislockRsValkey('redislock-rs-valkey-scripted', false, 'redislock-rs on Valkey, scripted (REDISLOCK_RS_LUA_FREE=0: SET NX PX + EVALSHA), JS-thread engine'),
  ...ALL.filter((c) => c.js)
]

/**
 * The Web Locks face (the web-locks section, issue 36): this package's
 * `require('redislock-rs/web-locks')`, one `new LockManager({ host, port },
 * { prefix: 'weblocks:bench:', lease: 10000 })` per process shared by all
 * its workers, on the JS-thread engine; `mode` ('exclusive' or 'shared') is
 * the mode of every request its workers make:
 * - worker(key): `await locks.request(key, { mode }, async () => {})` in a
 *   loop (uncontended: every worker its own name);
 * - waiter(key): one request at a time as { acquire(), release() } for the
 *   handoff mode (child.js, mode 'handoff'): acquire() calls request() and
 *   resolves true when the callback starts; release() settles the
 *   callback's promise (the end of the callback) and resolves once
 *   request() has, i.e. once the lock was given back (`delay` is not used:
 *   a waiting request is woken by the name's channel);
 * - rw(key, {readers, csMs}) (child.js, mode 'rw'): `readers` workers
 *   looping `request(key, { mode }, async () => {})` and one writer looping
 *   an exclusive `request(key, async () => sleep(csMs))`, all on ONE name:
 *   with mode 'shared' the mix, with 'exclusive' its baseline (the same
 *   workers, all exclusive).
 */
function webLocks (id, label, mode) {
  return {
    id,
    label,
    js: false,
    mode,
    engine: 'js',
    env: { REDISLOCK_RS_ENGINE: 'js' },
    async open ({ host, port }) {
      const { LockManager } = require('../web-locks')
      const locks = new LockManager({ host, port }, { prefix: 'weblocks:bench:', lease: TTL })
      const options = { mode }
      const nothing = async () => {}
      // Connect once outside the measurements.
      await locks.request(`bench:web-locks:probe:${id}:${process.pid}`, options, nothing)
      return {
        worker (key) {
          return { cycle: () => locks.request(key, options, nothing) }
        },
        waiter (key) {
          let done = null // settles the callback: the end of the critical section
          let given = null // request()'s promise: resolves once the lock is given back
          return {
            acquire: () => new Promise((resolve, reject) => {
              given = locks.request(key, options, () => new Promise((end) => { done = end; resolve(true) }))
              given.catch(reject) // a request that fails before its grant
            }),
            release: () => { const d = done; done = null; d(); return given }
          }
        },
        rw (key, { readers, csMs }) {
          return {
            readers: Array.from({ length: readers }, () => ({ cycle: () => locks.request(key, options, nothing) })),
            writer: { cycle: () => locks.request(key, () => sleep(csMs)) }
          }
        },
        close: async () => {}
      }
    }
  }
}

/**
 * The web-locks section's contenders, by scenario: uncontended (WEB_LOCKS:
 * ours exclusive and shared, and the redislock face's plain lock,
 * `createLock` acquire + release, in the same run), the handoff of one
 * name under 16 waiters (WEB_LOCKS_HANDOFF: ours exclusive, and the
 * redislock face with `wakeOnRelease: true`, `retries: -1`, `delay: 50`),
 * and the shared / exclusive mix on one name (WEB_LOCKS_MIX: the readers
 * shared, and the same workers all exclusive).
 */
const WEB_LOCKS_EXCLUSIVE = webLocks('redislock-rs-web-locks', 'redislock-rs/web-locks LockManager, exclusive, JS-thread engine', 'exclusive')
const WEB_LOCKS_SHARED = webLocks('redislock-rs-web-locks-shared', 'redislock-rs/web-locks LockManager, shared, JS-thread engine', 'shared')

/** The wake-on-release section's contenders, in this order (see RS_WAKE). */
const WAKE = [RS_WAKE, RS_PLAIN, redislock, redlock, semaphore]

const SYNC = [...SYNC_RW, ...SYNC_LOCKS, ...SYNC_FAIR, ...SYNC_SHARED]

const WEB_LOCKS = [WEB_LOCKS_EXCLUSIVE, WEB_LOCKS_SHARED, RS_PLAIN]
const WEB_LOCKS_HANDOFF = [WEB_LOCKS_EXCLUSIVE, RS_WAKE]
const WEB_LOCKS_MIX = [WEB_LOCKS_SHARED, WEB_LOCKS_EXCLUSIVE]

module.exports = {
  ALL,
  REDISSON,
  WAKE,
  QUORUM,
  CLUSTER,
  REDLOCK_FACE,
  SEMAPHORE_FACE,
  SEMAPHORE_LIMIT,
  SYNC_RW,
  SYNC_LOCKS,
  SYNC_FAIR,
  SYNC_SHARED,
  VALKEY,
  WEB_LOCKS,
  WEB_LOCKS_HANDOFF,
  WEB_LOCKS_MIX,
  byId: Object.fromEntries([...ALL, ...REDISSON, RS_WAKE, ...QUORUM, ...CLUSTER, ...REDLOCK_FACE, ...SEMAPHORE_FACE, ...SYNC, ...VALKEY, ...WEB_LOCKS].map((c) => [c.id, c])),
  DEL_IF_EQUAL,
  TTL
}
