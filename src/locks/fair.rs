//! Redisson's fair lock (`RFairLock`), as Java Redisson 4.7 writes it
//! (RedissonFairLock.java at 66863978b4a9; docs/redisson-layout.md): the
//! reentrant lock hash, plus a list `redisson_lock_queue:{name}` of waiting
//! holder fields in arrival order and a sorted set
//! `redisson_lock_timeout:{name}` of each waiter's deadline (ms, the
//! client's clock). A waiter whose deadline has passed at the head of the
//! queue is dropped by whoever runs a script next; a release is announced to
//! the next waiter only, on `redisson_lock__channel:{name}:<its field>`.
//!
//! Redisson's scripts, byte for byte, but for one change: its unlock
//! answers 1 ("unlocked") when the lock is not there at all; ours answers
//! nil ("not held by you") there, after waking the next waiter just the
//! same, so the face reports an unlock of a lock that expired.
//!
//! Beyond Redisson: [`FAIR_HEARTBEAT`]. Redisson's waiter never renews its
//! deadline (set when it queues: the lease left plus one waiter timeout per
//! waiter ahead), so one that waits longer than that (a long-held lock) is
//! dropped from the queue and joins again at its end, and one that died
//! holds the queue up until that deadline, however early the lock is
//! released. Ours renews its deadline after every attempt of its wait (at
//! least every third of the waiter timeout) to one waiter timeout per
//! place from now: a live waiter keeps its place however long it waits,
//! and a dead one is dropped one waiter timeout after its last renewal once
//! it heads the queue, whatever the lease.

use crate::locks::keys::prefix_name;

/// `acquireFailedAsync`: a waiter that gives up leaves the queue. KEYS
/// `[queue, timeouts]`, ARGV `[field, waiter timeout ms]`.
pub(crate) const FAIR_GIVE_UP: &str = "local queue = redis.call('lrange', KEYS[1], 0, -1);\
    local i = 1;\
    while i <= #queue and queue[i] ~= ARGV[1] do \
    i = i + 1;\
    end;\
    i = i + 1;\
    while i <= #queue do \
    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]);\
    i = i + 1;\
    end;\
    redis.call('zrem', KEYS[2], ARGV[1]);\
    redis.call('lrem', KEYS[1], 0, ARGV[1]);";

/// `tryLockInnerAsync` for one attempt (`EVAL_NULL_BOOLEAN`: it never
/// queues). KEYS `[name, queue, timeouts]`, ARGV `[lease ms, field, now ms,
/// waiter timeout ms]`; nil held, 1 not.
pub(crate) const FAIR_ONCE: &str = "while true do \
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0);\
    if firstThreadId2 == false then \
    break;\
    end;\
    local timeout = redis.call('zscore', KEYS[3], firstThreadId2);\
    if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[3]) then \
    redis.call('zrem', KEYS[3], firstThreadId2);\
    redis.call('lpop', KEYS[2]);\
    else \
    break;\
    end;\
    end;\
    if (redis.call('exists', KEYS[1]) == 0) \
    and ((redis.call('exists', KEYS[2]) == 0) \
    or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then \
    redis.call('lpop', KEYS[2]);\
    redis.call('zrem', KEYS[3], ARGV[2]);\
    local keys = redis.call('zrange', KEYS[3], 0, -1);\
    for i = 1, #keys, 1 do \
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[4]), keys[i]);\
    end;\
    redis.call('hset', KEYS[1], ARGV[2], 1);\
    redis.call('pexpire', KEYS[1], ARGV[1]);\
    return nil;\
    end;\
    if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
    redis.call('hincrby', KEYS[1], ARGV[2], 1);\
    redis.call('pexpire', KEYS[1], ARGV[1]);\
    return nil;\
    end;\
    return 1;";

/// `tryLockInnerAsync` for a wait (`EVAL_LONG`): queues the field when the
/// lock is not its turn. KEYS `[name, queue, timeouts]`, ARGV `[lease ms,
/// field, waiter timeout ms, now ms]`; nil held, else how long to wait.
pub(crate) const FAIR_WAIT: &str = "while true do \
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0);\
    if firstThreadId2 == false then \
    break;\
    end;\
    local timeout = redis.call('zscore', KEYS[3], firstThreadId2);\
    if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then \
    redis.call('zrem', KEYS[3], firstThreadId2);\
    redis.call('lpop', KEYS[2]);\
    else \
    break;\
    end;\
    end;\
    if (redis.call('exists', KEYS[1]) == 0) \
    and ((redis.call('exists', KEYS[2]) == 0) \
    or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then \
    redis.call('lpop', KEYS[2]);\
    redis.call('zrem', KEYS[3], ARGV[2]);\
    local keys = redis.call('zrange', KEYS[3], 0, -1);\
    for i = 1, #keys, 1 do \
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);\
    end;\
    redis.call('hset', KEYS[1], ARGV[2], 1);\
    redis.call('pexpire', KEYS[1], ARGV[1]);\
    return nil;\
    end;\
    if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then \
    redis.call('hincrby', KEYS[1], ARGV[2],1);\
    redis.call('pexpire', KEYS[1], ARGV[1]);\
    return nil;\
    end;\
    local timeout = redis.call('zscore', KEYS[3], ARGV[2]);\
    if timeout ~= false then \
    local ttl = redis.call('pttl', KEYS[1]);\
    return math.max(0, ttl); \
    end;\
    local lastThreadId = redis.call('lindex', KEYS[2], -1);\
    local ttl;\
    if lastThreadId ~= false and lastThreadId ~= ARGV[2] and redis.call('zscore', KEYS[3], lastThreadId) ~= false then \
    ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);\
    else \
    ttl = redis.call('pttl', KEYS[1]);\
    end;\
    local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);\
    if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then \
    redis.call('rpush', KEYS[2], ARGV[2]);\
    end;\
    return ttl;";

/// `unlockInnerAsync` (see the module's note on its one change): KEYS
/// `[name, queue, timeouts, channel, unlock latch]`, ARGV `[0, lease ms,
/// field, now ms, 'publish', latch ms]`.
pub(crate) const FAIR_UNLOCK: &str = "local val = redis.call('get', KEYS[5]); \
    if val ~= false then \
    return tonumber(val);\
    end; \
    while true do \
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0);\
    if firstThreadId2 == false then \
    break;\
    end; \
    local timeout = redis.call('zscore', KEYS[3], firstThreadId2);\
    if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then \
    redis.call('zrem', KEYS[3], firstThreadId2); \
    redis.call('lpop', KEYS[2]); \
    else \
    break;\
    end; \
    end;\
    if (redis.call('exists', KEYS[1]) == 0) then \
    local nextThreadId = redis.call('lindex', KEYS[2], 0); \
    if nextThreadId ~= false then \
    redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); \
    end; \
    return nil; \
    end;\
    if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then \
    return nil;\
    end; \
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
    if (counter > 0) then \
    redis.call('pexpire', KEYS[1], ARGV[2]); \
    redis.call('set', KEYS[5], 0, 'px', ARGV[6]); \
    return 0; \
    end; \
    redis.call('del', KEYS[1]); \
    redis.call('set', KEYS[5], 1, 'px', ARGV[6]); \
    local nextThreadId = redis.call('lindex', KEYS[2], 0); \
    if nextThreadId ~= false then \
    redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); \
    end; \
    return 1; ";

/// `forceUnlockAsync`: KEYS `[name, queue, timeouts, channel]`, ARGV `[0, now
/// ms, 'publish']`.
pub(crate) const FAIR_FORCE: &str = "while true do \
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0);\
    if firstThreadId2 == false then \
    break;\
    end; \
    local timeout = redis.call('zscore', KEYS[3], firstThreadId2);\
    if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[2]) then \
    redis.call('zrem', KEYS[3], firstThreadId2); \
    redis.call('lpop', KEYS[2]); \
    else \
    break;\
    end; \
    end;\
    if (redis.call('del', KEYS[1]) == 1) then \
    local nextThreadId = redis.call('lindex', KEYS[2], 0); \
    if nextThreadId ~= false then \
    redis.call(ARGV[3], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); \
    end; \
    return 1; \
    end; \
    return 0;";

/// Ours: a queued waiter's deadline becomes `now + waiter timeout × (1 +
/// waiters ahead of it)`, Redisson's own reckoning (each waiter ahead that
/// takes the lock or gives up takes one waiter timeout off the deadlines
/// behind it), so it stays ahead of the clock until the next heartbeat.
/// KEYS `[queue, timeouts]`, ARGV `[field, now + waiter timeout ms, waiter
/// timeout ms]`; 0 when the field is no longer queued.
pub(crate) const FAIR_HEARTBEAT: &str = "local t = redis.call('zscore', KEYS[2], ARGV[1]); \
    if t == false then return 0; end; \
    local queue = redis.call('lrange', KEYS[1], 0, -1); \
    local ahead = 0; \
    for i = 1, #queue do if queue[i] == ARGV[1] then ahead = i - 1; break; end; end; \
    redis.call('zadd', KEYS[2], tonumber(ARGV[2]) + ahead * tonumber(ARGV[3]), ARGV[1]); \
    return 1;";

/// Redisson's `threadWaitTime` default (`Config.fairLockWaitTimeout`) is
/// 5 minutes; ours, with the heartbeat, is 5 s (`fairLockWaitTimeout`).
pub const DEFAULT_WAITER_TIMEOUT_MS: u64 = 5000;

/// The queue of waiting fields.
pub fn queue_name(name: &str) -> String {
    prefix_name("redisson_lock_queue", name)
}

/// The waiters' deadlines.
pub fn timeouts_name(name: &str) -> String {
    prefix_name("redisson_lock_timeout", name)
}

/// Where `field` hears that it is its turn: `<lock channel>:<field>`.
pub fn waiter_channel(channel: &str, field: &str) -> String {
    format!("{channel}:{field}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::lua::Lua;

    #[test]
    fn scripts_are_redissons() {
        // SHA-1 of Java Redisson's script text (taken from its source).
        assert_eq!(
            Lua::new(FAIR_WAIT).hash(),
            "8f6ed299ffd259f0539c20f89253998c0777ea75"
        );
        assert_eq!(
            Lua::new(FAIR_FORCE).hash(),
            "71ed11d4e4818119ac560b3d670a7f08256afc46"
        );
        // The one change: no "unlocked" for a lock that is not there.
        assert_eq!(
            Lua::new(FAIR_ONCE).hash(),
            "d20501c26a30adf6fb0fe9883bbbcc497e6157e2"
        );
        assert_eq!(
            Lua::new(FAIR_GIVE_UP).hash(),
            "d1ddef65ad80886b5d36e023c99930044ddd653a"
        );
        assert_eq!(
            Lua::new(FAIR_FORCE).hash(),
            "71ed11d4e4818119ac560b3d670a7f08256afc46"
        );
        // The one change: no "unlocked" for a lock that is not there.
        assert!(FAIR_UNLOCK.contains("ARGV[1]); end; return nil; end;if (redis.call('hexists'"));
    }

    #[test]
    fn names_are_redissons() {
        assert_eq!(queue_name("q"), "redisson_lock_queue:{q}");
        assert_eq!(timeouts_name("{q}1"), "redisson_lock_timeout:{q}1");
        assert_eq!(
            waiter_channel("redisson_lock__channel:{q}", "id:c"),
            "redisson_lock__channel:{q}:id:c"
        );
    }
}
