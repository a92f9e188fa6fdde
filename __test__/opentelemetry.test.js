'use strict'

/**
 * The diagnostics_channel channels, through examples/opentelemetry.js and
 * the real OpenTelemetry SDK (in-memory exporters): a contended acquire is
 * a span under the caller's active span, with its face, kind, keys,
 * servers, outcome and the time it waited; a release, an extend and a try
 * that finds the lock held are spans too; a lost lock is a counted loss
 * and a span; the redis-semaphore and node-redlock faces publish on the
 * same channels; and with nobody subscribed nothing is published.
 */

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const dc = require('node:diagnostics_channel')
const { trace, context } = require('@opentelemetry/api')
const { BasicTracerProvider, SimpleSpanProcessor, InMemorySpanExporter } = require('@opentelemetry/sdk-trace-base')
const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics')
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
const R = require('..')
const S = require('../semaphore')
const Redlock = require('../redlock')
const RS = require('../redisson')
const { instrumentLocks } = require('../examples/opentelemetry')
const { useRedis } = require('./helpers/redis')
const { sleep } = require('./helpers/wait')

const redis = useRedis()
let seq = 0
const fresh = (what) => `otel:${what}:${process.pid}:${seq++}`

class Reader extends MetricReader {
  async onForceFlush () {}
  async onShutdown () {}
}

const exporter = new InMemorySpanExporter()
const reader = new Reader()
const contextManager = new AsyncLocalStorageContextManager().enable()
let tracer
let stop

before(() => {
  context.setGlobalContextManager(contextManager)
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  tracer = provider.getTracer('test')
  const meter = new MeterProvider({ readers: [reader] }).getMeter('test')
  stop = instrumentLocks({ tracer, meter })
})

after(() => {
  stop()
  context.disable()
})

const spansNamed = (name) => exporter.getFinishedSpans().filter((s) => s.name === name)
const parentOf = (span) => (span.parentSpanContext || {}).spanId || span.parentSpanId

async function metric (name) {
  const { resourceMetrics } = await reader.collect()
  for (const sm of resourceMetrics.scopeMetrics) {
    for (const m of sm.metrics) if (m.descriptor.name === name) return m.dataPoints
  }
  return []
}

test('a contended acquire is a span under the caller\'s span, with what it waited for and how it ended; a release too', async () => {
  exporter.reset()
  const key = fresh('contended')
  const holder = R.createLock(redis.server.url, { timeout: 5000 })
  const waiter = R.createLock(redis.server.url, { timeout: 5000, retries: 50, delay: 20, fencing: true })
  await holder.acquire(key)
  setTimeout(() => holder.release(), 200)
  let jobId
  await tracer.startActiveSpan('job', async (job) => {
    jobId = job.spanContext().spanId
    await waiter.acquire(key)
    await waiter.release()
    job.end()
  })
  const acquires = spansNamed('redislock acquire').filter((s) => parentOf(s) === jobId)
  assert.equal(acquires.length, 1, 'the waiter\'s acquire, a child of the job')
  const a = acquires[0].attributes
  assert.equal(a['redislock.face'], 'redislock')
  assert.equal(a['redislock.kind'], 'lock')
  assert.deepEqual(a['redislock.keys'], [key])
  assert.deepEqual(a['redislock.servers'], [`127.0.0.1:${redis.server.port}/0`])
  assert.equal(a['redislock.outcome'], 'granted')
  assert.match(a['redislock.fencing_token'], /^\d+$/)
  const ms = acquires[0].duration[0] * 1000 + acquires[0].duration[1] / 1e6
  assert.ok(ms >= 150, `the span covers the wait: ${ms} ms`)
  const releases = spansNamed('redislock release').filter((s) => parentOf(s) === jobId)
  assert.equal(releases.length, 1)
  assert.equal(releases[0].attributes['redislock.outcome'], 'released')
  const points = await metric('redislock.acquire.duration')
  assert.ok(points.some((p) => p.attributes['redislock.outcome'] === 'granted' && p.value.count >= 1), 'the wait histogram has the acquires')
})

test('a try that finds the lock held, an extend, and a failure are spans with their outcome', async () => {
  exporter.reset()
  const key = fresh('outcomes')
  const holder = R.createLock(redis.server.url, { timeout: 5000 })
  await holder.acquire(key)
  assert.equal(await R.createLock(redis.server.url).tryAcquire(key), false)
  await holder.extend(8000)
  await holder.release()
  const down = R.createLock({ host: '127.0.0.1', port: 1, connectTimeout: 200 }, { retries: 0 })
  await assert.rejects(down.acquire(key))
  const outcomes = exporter.getFinishedSpans().map((s) => `${s.name}:${s.attributes['redislock.outcome']}`)
  assert.deepEqual(outcomes, ['redislock acquire:granted', 'redislock acquire:held', 'redislock extend:extended', 'redislock release:released', 'redislock acquire:failed'])
  const failed = exporter.getFinishedSpans()[4]
  assert.equal(failed.status.code, 2, 'an error status')
  assert.equal(failed.events[0].name, 'exception')
})

test('a lost lock is counted and has a span with its reason', async () => {
  exporter.reset()
  const key = fresh('lost')
  const lock = R.createLock(redis.server.url, { timeout: 400, autoExtend: true })
  await lock.acquire(key)
  await redis.check.del(key)
  for (let i = 0; i < 100 && !lock.signal.aborted; i++) await sleep(20)
  assert.equal(lock.signal.aborted, true)
  const lost = spansNamed('redislock lost')
  assert.equal(lost.length, 1)
  assert.equal(lost[0].attributes['redislock.reason'], 'expired')
  assert.deepEqual(lost[0].attributes['redislock.keys'], [key])
  const points = await metric('redislock.lock.lost')
  assert.ok(points.some((p) => p.attributes['redislock.reason'] === 'expired' && p.value >= 1))
})

test('the other faces publish on the same channels: redis-semaphore and node-redlock', async () => {
  exporter.reset()
  const key = fresh('faces')
  const m = new S.Mutex(redis.server.url, key, { acquireTimeout: 50 })
  await m.acquire()
  assert.equal(await new S.Mutex(redis.server.url, key, { acquireTimeout: 50 }).tryAcquire(), false)
  await m.release()
  const redlock = new Redlock([redis.server.url], { retryCount: 0 })
  const l = await redlock.lock([key, `${key}:b`], 1000)
  await l.unlock()
  const seen = exporter.getFinishedSpans().map((s) => [s.name, s.attributes['redislock.face'], s.attributes['redislock.kind'], s.attributes['redislock.outcome']])
  assert.deepEqual(seen, [
    ['redislock acquire', 'semaphore', 'mutex', 'granted'],
    ['redislock acquire', 'semaphore', 'mutex', 'timed-out'],
    ['redislock release', 'semaphore', 'mutex', 'released'],
    ['redislock acquire', 'redlock', 'redlock', 'granted'],
    ['redislock release', 'redlock', 'redlock', 'released']
  ])
  assert.deepEqual(exporter.getFinishedSpans()[3].attributes['redislock.keys'], [key, `${key}:b`])
})

test('the Redisson face\'s read-write and fair locks and its semaphores publish too, with their kind', async () => {
  exporter.reset()
  const key = fresh('redisson')
  const r = new RS.Redisson({ redis: { client: redis.server.url } })
  try {
    const rw = r.getReadWriteLock(key)
    await rw.readLock().lock(1000)
    await rw.readLock().unlock()
    const fair = r.getFairLock(`${key}:fair`)
    assert.equal(await fair.tryLock(0, 1000), true)
    await fair.unlock()
    const sem = r.getSemaphore(`${key}:sem`)
    await sem.trySetPermits(1)
    assert.equal(await sem.tryAcquire(1), true)
    assert.equal(await sem.tryAcquire(1), false)
    await sem.release(1)
    const pes = r.getPermitExpirableSemaphore(`${key}:pes`)
    await pes.trySetPermits(1)
    const id = await pes.acquire(1000)
    assert.equal(await pes.updateLeaseTime(id, 2000), true)
    await pes.release(id)
    // Counting down a latch is not a lock operation: not traced.
    const latch = r.getCountDownLatch(`${key}:latch`)
    await latch.trySetCount(1)
    await latch.countDown()
  } finally {
    await r.quit()
  }
  const seen = exporter.getFinishedSpans().map((s) => [s.name, s.attributes['redislock.face'], s.attributes['redislock.kind'], s.attributes['redislock.outcome']])
  assert.deepEqual(seen, [
    ['redislock acquire', 'redisson', 'read-lock', 'granted'],
    ['redislock release', 'redisson', 'read-lock', 'released'],
    ['redislock acquire', 'redisson', 'fair-lock', 'granted'],
    ['redislock release', 'redisson', 'fair-lock', 'released'],
    ['redislock acquire', 'redisson', 'rsemaphore', 'granted'],
    ['redislock acquire', 'redisson', 'rsemaphore', 'held'],
    ['redislock release', 'redisson', 'rsemaphore', 'released'],
    ['redislock acquire', 'redisson', 'permit-semaphore', 'granted'],
    ['redislock extend', 'redisson', 'permit-semaphore', 'extended'],
    ['redislock release', 'redisson', 'permit-semaphore', 'released']
  ])
})

test('with nobody subscribed, nothing is published', async () => {
  stop()
  try {
    assert.equal(dc.tracingChannel('redislock-rs:acquire').hasSubscribers, false)
    exporter.reset()
    const lock = R.createLock(redis.server.url)
    await lock.acquire(fresh('quiet'))
    await lock.release()
    assert.equal(exporter.getFinishedSpans().length, 0)
  } finally {
    stop = instrumentLocks({ tracer, meter: new MeterProvider({ readers: [] }).getMeter('again') })
  }
})

test('the keeper\'s renewals are told on redislock-rs:renewal, with the key', async () => {
  const key = fresh('renewal')
  const seen = []
  const onRenewal = (msg) => seen.push(msg.key)
  dc.subscribe('redislock-rs:renewal', onRenewal)
  try {
    const lock = R.createLock(redis.server.url, { timeout: 300, autoExtend: true })
    await lock.acquire(key)
    for (let i = 0; i < 100 && seen.length < 2; i++) await sleep(20)
    await lock.release()
    assert.ok(seen.length >= 2, `renewals seen: ${seen.length}`)
    assert.ok(seen.every((k) => k === key), JSON.stringify(seen))
  } finally {
    dc.unsubscribe('redislock-rs:renewal', onRenewal)
  }
})

test('every granted acquire carries its attempts in the redislock-rs:acquire context, one that waited too', async () => {
  const seen = []
  const onEnd = (ctx) => { if (ctx.outcome === 'granted') seen.push([ctx.face, ctx.kind, ctx.attempts]) }
  const tc = dc.tracingChannel('redislock-rs:acquire')
  tc.subscribe({ asyncEnd: onEnd })
  const url = redis.server.url
  const r = new RS.Redisson({ redis: { client: url } })
  try {
    // Each: take `key` with `hold`, start `wait` on it, free it a little later.
    const faces = [
      ['redislock lock', () => R.createLock(url, { timeout: 5000, retries: 200, delay: 10 }), (l, k) => l.acquire(k), (l) => l.release()],
      ['redislock lock, fencing', () => R.createLock(url, { timeout: 5000, retries: 200, delay: 10, fencing: true }), (l, k) => l.acquire(k), (l) => l.release()],
      ['redislock quorum', () => R.createLock([url], { timeout: 5000, retries: 200, delay: 10 }), (l, k) => l.acquire(k), (l) => l.release()],
      ['semaphore mutex', (k) => new S.Mutex(url, k, { acquireTimeout: 5000, retryInterval: 10 }), (l) => l.acquire(), (l) => l.release()],
      ['redisson rlock', (k) => r.getLock(k), (l) => l.tryLock(5000, 5000), (l) => l.unlock()]
    ]
    for (const [name, make, take, free] of faces) {
      const key = fresh('attempts')
      seen.length = 0
      const holder = make(key)
      await take(holder, key)
      const waiter = make(key)
      const waiting = take(waiter, key)
      await sleep(60)
      await free(holder)
      await waiting
      await free(waiter)
      assert.equal(seen.length, 2, `${name}: two grants traced`)
      assert.equal(seen[0][2], 1, `${name}: the first took one attempt (${seen[0]})`)
      assert.ok(Number.isInteger(seen[1][2]) && seen[1][2] > 1, `${name}: the waiter's attempts (${seen[1]})`)
    }
  } finally {
    tc.unsubscribe({ asyncEnd: onEnd })
    await r.quit()
  }
})
