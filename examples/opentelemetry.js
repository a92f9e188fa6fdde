'use strict'

/**
 * OpenTelemetry for redislock-rs's locks, from its diagnostics_channel
 * channels (docs/observability.md): a span per acquire, release and
 * extend (child of whatever span is active where the call was made), a
 * histogram of the time acquires take (waits included) and a counter of
 * lost locks, with a short span for each loss. Copy it into your code, or:
 *
 *   const { instrumentLocks } = require('./opentelemetry')
 *   const stop = instrumentLocks({ tracer, meter })   // from your OpenTelemetry setup
 *
 *   node examples/opentelemetry.js   # a demo: spans printed to the console
 *                                    # (a throwaway redis-server unless REDIS_URL is set)
 */

const dc = require('node:diagnostics_channel')
const { trace, metrics, context, SpanKind, SpanStatusCode } = require('@opentelemetry/api')

/** Subscribes; returns a function that unsubscribes. */
function instrumentLocks ({ tracer = trace.getTracer('redislock-rs'), meter = metrics.getMeter('redislock-rs') } = {}) {
  const spans = new WeakMap()
  const waits = meter.createHistogram('redislock.acquire.duration', { unit: 'ms', description: 'How long acquires took, waiting included' })
  const losses = meter.createCounter('redislock.lock.lost', { description: 'Locks found lost while held' })
  const undo = []

  const finish = (ctx) => {
    const span = spans.get(ctx)
    if (span === undefined) return
    spans.delete(ctx)
    span.setAttribute('redislock.outcome', ctx.outcome)
    if (ctx.attempts !== undefined) span.setAttribute('redislock.attempts', ctx.attempts)
    if (ctx.fencingToken !== undefined) span.setAttribute('redislock.fencing_token', String(ctx.fencingToken))
    if (ctx.error !== undefined) {
      span.recordException(ctx.error)
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(ctx.error && ctx.error.message) })
    }
    if (ctx.op === 'acquire') waits.record(ctx.durationMs, { 'redislock.face': ctx.face, 'redislock.outcome': ctx.outcome })
    span.end()
  }

  for (const op of ['acquire', 'release', 'extend']) {
    const channel = dc.tracingChannel(`redislock-rs:${op}`)
    const handlers = {
      start (ctx) {
        spans.set(ctx, tracer.startSpan(`redislock ${op}`, {
          kind: SpanKind.CLIENT,
          attributes: {
            'redislock.face': ctx.face,
            'redislock.kind': ctx.kind,
            'redislock.keys': ctx.keys,
            'redislock.servers': ctx.servers
          }
        }, context.active()))
      },
      // A call that threw at once ends here; the others end on asyncEnd.
      end (ctx) { if (ctx.error !== undefined) finish(ctx) },
      asyncStart () {},
      asyncEnd: finish,
      error () {}
    }
    channel.subscribe(handlers)
    undo.push(() => channel.unsubscribe(handlers))
  }

  const onLost = ({ face, keys, reason, error }) => {
    losses.add(1, { 'redislock.face': face, 'redislock.reason': reason })
    const span = tracer.startSpan('redislock lost', { attributes: { 'redislock.face': face, 'redislock.keys': keys, 'redislock.reason': reason } })
    span.recordException(error)
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message })
    span.end()
  }
  dc.subscribe('redislock-rs:lost', onLost)
  undo.push(() => dc.unsubscribe('redislock-rs:lost', onLost))
  return () => { for (const u of undo) u() }
}

module.exports = { instrumentLocks }

if (require.main === module) {
  const { BasicTracerProvider, SimpleSpanProcessor, ConsoleSpanExporter } = require('@opentelemetry/sdk-trace-base')
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
  const { createLock } = require('..')
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] }))
  const stop = instrumentLocks()
  const run = async (url) => {
    const lock = createLock(url, { timeout: 2000 })
    await trace.getTracer('demo').startActiveSpan('nightly job', async (job) => {
      await lock.acquire('demo:otel')
      await lock.release()
      job.end()
    })
  }
  const demo = process.env.REDIS_URL
    ? run(process.env.REDIS_URL)
    : require('../__test__/helpers/redis').startRedis().then((s) => run(s.url).finally(() => s.stop()))
  demo.then(stop, (err) => { console.error(err); process.exitCode = 1 })
}
