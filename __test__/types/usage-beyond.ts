// The API beyond redislock 1.3.0, as a TypeScript user writes it (autoExtend,
// fencing, wakeOnRelease, signal, tryAcquire, using, `await using`,
// inspect). Compiled with `tsc --noEmit --strict` by __test__/types.test.js;
// each `@ts-expect-error` line must really be an error.

import {
  createLock,
  using,
  inspect,
  LockLostError,
  type Lock,
  type LockLostReason,
  type LockInspection,
  type QuorumLock,
  type ServerOutcome,
  LockAcquisitionError
} from 'redislock-rs'

async function beyond (): Promise<bigint | null> {
  const kept: Lock = createLock('redis://127.0.0.1:6379', {
    timeout: 1000,
    autoExtend: { maxHoldMs: 60000, maxEventLoopLagMs: 5000 },
    fencing: true,
    wakeOnRelease: true
  })
  createLock('redis://127.0.0.1:6379', { autoExtend: true })
  const ac = new AbortController()
  await kept.acquire('job', { signal: ac.signal })
  await kept.acquire('job', { signal: ac.signal }, (err: Error | null) => {})
  const signal: AbortSignal | null = kept.signal
  signal?.addEventListener('abort', () => {
    const why = signal.reason
    if (why instanceof LockLostError) {
      const reason: LockLostReason = why.reason
      console.log(reason, why.key)
    }
  })
  const token: bigint | null = kept.fencingToken
  const left: number = kept.remainingMs()
  const got: boolean = await kept.tryAcquire('other')
  console.log(left, got)
  await kept.release()

  const value: number = await using('redis://127.0.0.1:6379', 'job', { timeout: 5000 }, async (s: AbortSignal) => {
    return s.aborted ? 0 : 1
  })
  const short: string = await using('redis://127.0.0.1:6379', 'job', () => 'x')
  console.log(value, short)

  {
    await using lock = createLock('redis://127.0.0.1:6379')
    await lock.acquire('scoped')
  }

  const info: LockInspection = await inspect('redis://127.0.0.1:6379', 'job')
  const ttl: number = info.ttlMs
  const fence: bigint | undefined = info.fencingToken
  console.log(ttl, fence, info.owner)

  const quorum: QuorumLock = createLock(['redis://a:6379', 'redis://b:6379', { host: 'c', port: 6379 }], { timeout: 5000, serverTimeout: 50 })
  try {
    await quorum.acquire('job')
    const valid: number = quorum.validityMs()
    await quorum.extend(5000)
    const kept: QuorumLock = createLock(['redis://a', 'redis://b', 'redis://c'], { autoExtend: { maxHoldMs: 60000 }, wakeOnRelease: true })
    await kept.acquire('job', { signal: AbortSignal.timeout(1000) })
    const lost: AbortSignal | null = kept.signal
    console.log(lost?.aborted)
    await quorum.release()
    console.log(valid)
  } catch (err) {
    if (err instanceof LockAcquisitionError) {
      const servers: ServerOutcome[] | undefined = err.servers
      console.log(servers?.map((s) => `${s.server} ${s.outcome}`))
    }
  }
  // @ts-expect-error a quorum lock has no fencing option
  createLock(['redis://a', 'redis://b'], { fencing: true })
  // @ts-expect-error a quorum lock's signal is read-only
  quorum.signal = null
  // @ts-expect-error autoExtend bounds are numbers
  createLock('redis://x', { autoExtend: { maxHoldMs: '1m' } })
  // @ts-expect-error fencing is a boolean
  createLock('redis://x', { fencing: 'yes' })
  // @ts-expect-error the signal is read-only
  kept.signal = null
  // @ts-expect-error a fencing token is a bigint, not a number
  const asNumber: number = kept.fencingToken
  // @ts-expect-error the routine's value type flows through using
  const wrong: string = await using('redis://x', 'k', {}, async () => 42)
  // @ts-expect-error tryAcquire resolves a boolean
  const nothing: void = await kept.tryAcquire('k')
  console.log(asNumber, wrong, nothing)
  return token
}

export { beyond }
