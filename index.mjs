import redislock from './index.js'

export const {
  createLock,
  setDefaults,
  getAcquiredLocks,
  using,
  inspect,
  viaClient,
  LockAcquisitionError,
  LockReleaseError,
  LockExtendError,
  LockLostError
} = redislock

export default redislock
