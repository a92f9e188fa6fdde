// redislock-rs/web-locks: lib.dom's LockManager shapes, over Redis.
import { LockManager, Lock, LockManagerSnapshot, LockOptions } from 'redislock-rs/web-locks'

async function main (): Promise<void> {
  const locks = new LockManager('redis://127.0.0.1:6379', { prefix: 'app:', lease: 10000, clientId: 'worker-1' })
  const n: number = await locks.request('invoice:42', async (lock) => {
    if (lock !== null) {
      const name: string = lock.name
      const mode: 'exclusive' | 'shared' = lock.mode
      const aborted: boolean = lock.signal.aborted
      void [name, mode, aborted]
    }
    return 42
  })
  const options: LockOptions = { mode: 'shared', signal: AbortSignal.timeout(5000) }
  const s: string = await locks.request('cache', options, () => 'read')
  const busy: string = await locks.request('job', { ifAvailable: true }, (lock: Lock | null) => lock === null ? 'busy' : 'ran')
  const snapshot: LockManagerSnapshot = await locks.query()
  for (const info of snapshot.held ?? []) {
    const who: string | undefined = info.clientId
    void who
  }
  // @ts-expect-error a mode is 'exclusive' or 'shared'
  await locks.request('x', { mode: 'readonly' }, () => 1)
  void [n, s, busy]
}
void main
