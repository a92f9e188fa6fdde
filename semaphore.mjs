import face from './semaphore.js'

export const { defaultTimeoutOptions, Mutex, Semaphore, MultiSemaphore, LostLockError, TimeoutError } = face
export default face
