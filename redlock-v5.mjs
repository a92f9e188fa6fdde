import v5 from './redlock-v5.js'

export const { Redlock, Lock, ExecutionError, ResourceLockedError } = v5
export default v5.Redlock
