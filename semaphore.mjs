import face from './semaphore.js'

export const { defaultTimeoutOptions, Mutex, Semaphore, MultiSemaphore, RedlockMutex, RedlockSemaphore, RedlockMultiSemaphore, LostLockError, TimeoutError } = face
export default face
