import redisson from './redisson.js'

export const { Redisson, TimeUnit, RedissonLockError } = redisson
export default redisson
