import webLocks from './web-locks.js'

export const { LockManager, Lock } = webLocks
export default webLocks
