//! Redisson's read-write lock (`RReadWriteLock`), as Java Redisson 4.7
//! writes it (RedissonReadLock.java, RedissonWriteLock.java,
//! renewal/ReadLockTask.java at 66863978b4a9; docs/redisson-layout.md): one
//! hash at the lock's name with `mode` (`read` or `write`) and one field per
//! holder (`<id>:<client>` for a reader, `<id>:<client>:write` for the
//! writer) counting its holds; each read hold also has a key
//! `{name}:<field>:rwlock_timeout:<n>` carrying that hold's own lease, so the
//! hash lives as long as its longest reader. Releases are announced on
//! `redisson_rwlock:{name}`. The scripts are Redisson's, byte for byte
//! (EVALSHA hashes match a Java process's), with `'publish'` as its
//! publish command. Only the scripts and names live here; the wait loop,
//! unlock latch and renewals are `locks::reentrant`'s.

use crate::locks::keys::{redisson_tagged, suffix_name};

/// `RedissonReadLock.tryLockInnerAsync`: KEYS `[name, timeout prefix]`,
/// ARGV `[lease ms, field, write field]`; nil when held, else the PTTL.
pub(crate) const READ_TRY: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); \
    if (mode == false) then \
    redis.call('hset', KEYS[1], 'mode', 'read'); \
    redis.call('hset', KEYS[1], ARGV[2], 1); \
    redis.call('set', KEYS[2] .. ':1', 1); \
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); \
    redis.call('pexpire', KEYS[1], ARGV[1]); \
    return nil; \
    end; \
    if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then \
    local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); \
    local key = KEYS[2] .. ':' .. ind;\
    redis.call('set', key, 1); \
    redis.call('pexpire', key, ARGV[1]); \
    local remainTime = redis.call('pttl', KEYS[1]); \
    redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); \
    return nil; \
    end;\
    return redis.call('pttl', KEYS[1]);";

/// `RedissonReadLock.unlockInnerAsync`: KEYS `[name, channel, timeout
/// prefix, key prefix, unlock latch]`, ARGV `[0, field, 'publish', latch
/// ms]`; nil not held, 0 others still hold it, 1 the last reader left.
pub(crate) const READ_UNLOCK: &str = "local val = redis.call('get', KEYS[5]); \
    if val ~= false then \
    return tonumber(val);\
    end; \
    local mode = redis.call('hget', KEYS[1], 'mode'); \
    if (mode == false) then \
    redis.call(ARGV[3], KEYS[2], ARGV[1]); \
    redis.call('set', KEYS[5], 1, 'px', ARGV[4]); \
    return nil; \
    end; \
    local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); \
    if (lockExists == 0) then \
    return nil;\
    end; \
    local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); \
    if (counter == 0) then \
    redis.call('hdel', KEYS[1], ARGV[2]); \
    end;\
    redis.call('del', KEYS[3] .. ':' .. (counter+1)); \
    if (redis.call('hlen', KEYS[1]) > 1) then \
    local maxRemainTime = -3; \
    local keys = redis.call('hkeys', KEYS[1]); \
    for n, key in ipairs(keys) do \
    counter = tonumber(redis.call('hget', KEYS[1], key)); \
    if type(counter) == 'number' then \
    for i=counter, 1, -1 do \
    local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i); \
    maxRemainTime = math.max(remainTime, maxRemainTime);\
    end; \
    end; \
    end; \
    if maxRemainTime > 0 then \
    redis.call('pexpire', KEYS[1], maxRemainTime); \
    redis.call('set', KEYS[5], 0, 'px', ARGV[4]); \
    return 0; \
    end;\
    if mode == 'write' then \
    redis.call('set', KEYS[5], 0, 'px', ARGV[4]); \
    return 0;\
    end; \
    end; \
    redis.call('del', KEYS[1]); \
    redis.call(ARGV[3], KEYS[2], ARGV[1]); \
    redis.call('set', KEYS[5], 1, 'px', ARGV[4]); \
    return 1; ";

/// `RedissonReadLock.forceUnlockAsync`: KEYS `[name, channel]`, ARGV `[0,
/// 'publish']`.
pub(crate) const READ_FORCE: &str = "if (redis.call('hget', KEYS[1], 'mode') == 'read') then \
    redis.call('del', KEYS[1]); \
    redis.call(ARGV[2], KEYS[2], ARGV[1]); \
    return 1; \
    end; \
    return 0; ";

/// `RedissonReadLock.isLocked`: KEYS `[name]`.
pub(crate) const READ_IS_LOCKED: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); \
    if (mode == 'read') or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then \
    return 1; \
    end; \
    return 0; ";

/// `renewal/ReadLockTask`'s chunk, used for one lock: KEYS `[name, key
/// prefix]`, ARGV `[lease ms, 1, field]`; `{1}` renewed, `{0}` not held.
pub(crate) const READ_RENEW: &str = "local result = {} \
    local argIdx = 2 \
    for i = 1, #KEYS, 2 do \
    local anyAlive = false; \
    local lockNamesCount = tonumber(ARGV[argIdx]); \
    argIdx = argIdx + 1; \
    for k = 1, lockNamesCount do \
    local counter = redis.call('hget', KEYS[i], ARGV[argIdx]); \
    if (counter ~= false) then \
    anyAlive = true; \
    for c=counter, 1, -1 do \
    redis.call('pexpire', KEYS[i+1] .. ':' .. ARGV[argIdx] .. ':rwlock_timeout:' .. c, ARGV[1]); \
    end; \
    end; \
    argIdx = argIdx + 1; \
    end; \
    if (anyAlive) then \
    redis.call('pexpire', KEYS[i], ARGV[1]); \
    table.insert(result, 1); \
    else \
    table.insert(result, 0); \
    end; \
    end; \
    return result;";

/// `RedissonWriteLock.tryLockInnerAsync`: KEYS `[name]`, ARGV `[lease ms,
/// write field]`; nil when held, else the PTTL.
pub(crate) const WRITE_TRY: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); \
    if (mode == false) then \
    redis.call('hset', KEYS[1], 'mode', 'write'); \
    redis.call('hset', KEYS[1], ARGV[2], 1); \
    redis.call('pexpire', KEYS[1], ARGV[1]); \
    return nil; \
    end; \
    if (mode == 'write') then \
    if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
    redis.call('hincrby', KEYS[1], ARGV[2], 1); \
    local currentExpire = redis.call('pttl', KEYS[1]); \
    redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); \
    return nil; \
    end; \
    end;\
    return redis.call('pttl', KEYS[1]);";

/// `RedissonWriteLock.unlockInnerAsync`: KEYS `[name, channel, unlock
/// latch]`, ARGV `[1, lease ms, write field, 'publish', latch ms]`.
pub(crate) const WRITE_UNLOCK: &str = "local val = redis.call('get', KEYS[3]); \
    if val ~= false then \
    return tonumber(val);\
    end; \
    local mode = redis.call('hget', KEYS[1], 'mode'); \
    if (mode == false) then \
    redis.call(ARGV[4], KEYS[2], ARGV[1]); \
    redis.call('set', KEYS[3], 1, 'px', ARGV[5]); \
    return nil; \
    end;\
    if (mode == 'write') then \
    local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); \
    if (lockExists == 0) then \
    return nil;\
    else \
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
    if (counter > 0) then \
    redis.call('pexpire', KEYS[1], ARGV[2]); \
    redis.call('set', KEYS[3], 0, 'px', ARGV[5]); \
    return 0; \
    else \
    redis.call('hdel', KEYS[1], ARGV[3]); \
    if (redis.call('hlen', KEYS[1]) == 1) then \
    redis.call('del', KEYS[1]); \
    redis.call(ARGV[4], KEYS[2], ARGV[1]); \
    else \
    redis.call('hset', KEYS[1], 'mode', 'read'); \
    end; \
    redis.call('set', KEYS[3], 1, 'px', ARGV[5]); \
    return 1; \
    end; \
    end; \
    end; \
    return nil;";

/// `RedissonWriteLock.forceUnlockAsync`: KEYS `[name, channel]`, ARGV `[1,
/// 'publish']`.
pub(crate) const WRITE_FORCE: &str = "if (redis.call('hget', KEYS[1], 'mode') == 'write') then \
    redis.call('del', KEYS[1]); \
    redis.call(ARGV[2], KEYS[2], ARGV[1]); \
    return 1; \
    end; \
    return 0; ";

/// `READ_UNLOCK_MESSAGE`: a write unlock's announcement (every waiter may go).
pub(crate) const WRITE_RELEASED: &str = "1";

/// The hash field of `field`'s write hold.
pub fn write_field(field: &str) -> String {
    format!("{field}:write")
}

/// `getKeyPrefix`: the lock's name as the read holds' keys begin, hash
/// tagged unless it already has a tag.
pub fn key_prefix(name: &str) -> String {
    redisson_tagged(name)
}

/// `getReadWriteTimeoutNamePrefix`: where `field`'s read holds keep their
/// leases (`<prefix>:1`, `<prefix>:2`, …).
pub fn timeout_prefix(name: &str, field: &str) -> String {
    suffix_name(name, &format!("{field}:rwlock_timeout"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::lua::Lua;

    #[test]
    fn scripts_are_redissons() {
        // SHA-1 of Java Redisson's script text (taken from its source).
        assert_eq!(
            Lua::new(READ_TRY).hash(),
            "95553a6ff11176c18e71344e89d116b06fd6f753"
        );
        assert_eq!(
            Lua::new(WRITE_TRY).hash(),
            "6306ba3bf1f563b284bed52d305fce615c6664d9"
        );
        assert_eq!(
            Lua::new(WRITE_UNLOCK).hash(),
            "21f5fb0f8ddfa9be5c3e0c9757c128796add75c6"
        );
        assert_eq!(
            Lua::new(READ_UNLOCK).hash(),
            "6e1b10e11ac0a3ed8e902562ecd32ce01b553039"
        );
        assert_eq!(
            Lua::new(READ_RENEW).hash(),
            "38d2b478dfbe264ab67c221b7e4be62245f00ba0"
        );
    }

    #[test]
    fn names_are_redissons() {
        assert_eq!(timeout_prefix("doc", "u:1"), "{doc}:u:1:rwlock_timeout");
        assert_eq!(timeout_prefix("{doc}x", "u:1"), "{doc}x:u:1:rwlock_timeout");
        assert_eq!(key_prefix("doc"), "{doc}");
        assert_eq!(write_field("u:1"), "u:1:write");
    }
}
