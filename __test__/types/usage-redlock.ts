// The node-redlock face's typings, as a redlock 4 user writes them.
// Compiled with `tsc --noEmit --strict` by __test__/types.test.js.

import Redlock = require('redislock-rs/redlock')
import Bluebird = require('bluebird')

const redlock = new Redlock(['redis://127.0.0.1:6379', { host: '127.0.0.1', port: 6380 }], {
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 200,
  lockScript: (s) => s
})

const waking = new Redlock(['redis://127.0.0.1:6379'], { wakeOnRelease: true, retryCount: -1 })

redlock.on('clientError', (err) => console.error('a redis error has occurred:', err))

async function use (): Promise<void> {
  const lock: Redlock.Lock = await redlock.lock('locks:account:322456', 1000)
  await lock.extend(1000)
  await lock.unlock()
  await (await waking.lock('locks:account:322456', 1000)).unlock()
  const several = await redlock.acquire(['a', 'b'], 1000)
  const again: Redlock.Lock = await redlock.extend(several, 2000)
  await redlock.release(again)
  await redlock.lockWithOptions('c', 1000, { retryCount: 1, retryDelay: 10 })
  redlock.lock('d', 1000, (err, l) => { if (!err && l) void l.unlock() })
  await Bluebird.using(redlock.disposer('e', 1000, (err) => console.error(err)), async (l: Redlock.Lock) => l.value)
  try {
    await redlock.lock('f', 1000)
  } catch (err) {
    if (err instanceof Redlock.LockError) console.log(err.name, err.attempts)
  }
  const lost: AbortSignal = lock.signal
  void lost
  const when: number = lock.expiration
  const tries: number = lock.attempts + lock.attemptsRemaining
  void [when, tries]
  // @ts-expect-error: the TTL is a number of milliseconds
  await redlock.lock('g', '1000')
  await redlock.quit()
}

void use
