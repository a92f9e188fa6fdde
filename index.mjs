import redislock from './index.js'

export const {
  createLock,
  setDefaults,
  getAcquiredLocks,
  LockAcquisitionError,
  LockReleaseError,
  LockExtendError
} = redislock

export default redislock
