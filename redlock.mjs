import Redlock from './redlock.js'

export const { Lock, LockError } = Redlock
export default Redlock
