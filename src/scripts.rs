//! The Lua scripts, byte-for-byte those of redislock 1.3.0. Run by EVALSHA;
//! when Redis answers NOSCRIPT, by EVAL with the body (see lock.rs), as
//! redislock does.

use std::sync::LazyLock;

use redis::Script;

/// Deletes KEYS[1] only if it still holds our token ARGV[1]. Returns 1 or 0.
pub const DEL_IF_EQUAL: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nend\nreturn 0";

/// Sets KEYS[1]'s TTL to ARGV[2] ms only if it still holds token ARGV[1].
pub const PEXPIRE_IF_EQUAL: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\nend\nreturn 0";

pub static DEL_IF_EQUAL_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(DEL_IF_EQUAL));
pub static PEXPIRE_IF_EQUAL_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(PEXPIRE_IF_EQUAL));
