//! The Lua scripts, and the one way they are run: by `EVALSHA`, and when
//! Redis answers NOSCRIPT, by `EVAL` with the body, as redislock's
//! redis-evalsha does. redislock 1.3.0's scripts are here byte for byte;
//! the Redisson face's are in reentrant.rs.

use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, FromRedisValue, Script, ServerErrorKind};

/// Deletes KEYS[1] only if it still holds our token ARGV[1]. Returns 1 or 0.
pub const DEL_IF_EQUAL: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nend\nreturn 0";

/// Sets KEYS[1]'s TTL to ARGV[2] ms only if it still holds token ARGV[1].
pub const PEXPIRE_IF_EQUAL: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\nend\nreturn 0";

/// `fencing: true`: takes KEYS[1] for token ARGV[1] with TTL ARGV[2] ms
/// and, in the same step, issues the next fencing token from the counter
/// KEYS[2] (same hash slot, never expires). Returns the token, or 0 when
/// the lock is held.
pub const FENCED_SET: &str = "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n  return redis.call('INCR', KEYS[2])\nend\nreturn 0";

/// `wakeOnRelease: true`: [`DEL_IF_EQUAL`] that also announces the release
/// on channel ARGV[2] with command ARGV[3] (`PUBLISH`, or `SPUBLISH` on
/// Redis Cluster 7+), in the same round trip. Returns 1 or 0.
pub const DEL_IF_EQUAL_ANNOUNCE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  redis.call('DEL', KEYS[1])\n  redis.call(ARGV[3], ARGV[2], '1')\n  return 1\nend\nreturn 0";

/// The lease keeper's renewal: sets KEYS[1]'s TTL to ARGV[2] ms if it still
/// holds token ARGV[1]. Returns 1 (renewed), 0 (the key is gone) or -1 (it
/// holds another token), so a loss says why in the same round trip.
pub const RENEW_OR_WHY: &str = "local v = redis.call('GET', KEYS[1])\nif v == ARGV[1] then\n  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\nend\nif v then\n  return -1\nend\nreturn 0";

/// A script's body with its hash.
pub struct Lua {
    pub body: String,
    script: Script,
}

impl Lua {
    pub fn new(body: impl Into<String>) -> Lua {
        let body = body.into();
        let script = Script::new(&body);
        Lua { body, script }
    }

    pub fn hash(&self) -> &str {
        self.script.get_hash()
    }

    /// Runs the script: `EVALSHA hash <rest>`, and on NOSCRIPT `EVAL body
    /// <rest>`. `rest` appends numkeys, the keys and the arguments; `size`
    /// is the command's (argument count, bytes) besides the verb and
    /// script, so it is allocated once.
    pub async fn eval<C, T>(
        &self,
        conn: &mut C,
        size: (usize, usize),
        rest: impl Fn(&mut Cmd),
    ) -> redis::RedisResult<T>
    where
        C: ConnectionLike,
        T: FromRedisValue,
    {
        let build = |verb: &str, script: &str| {
            let mut cmd = Cmd::with_capacity(2 + size.0, verb.len() + script.len() + size.1);
            cmd.arg(verb).arg(script);
            rest(&mut cmd);
            cmd
        };
        match build("EVALSHA", self.hash()).query_async(conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                build("EVAL", &self.body).query_async(conn).await
            }
            other => other,
        }
    }
}

pub static DEL_IF_EQUAL_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(DEL_IF_EQUAL));
pub static PEXPIRE_IF_EQUAL_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(PEXPIRE_IF_EQUAL));
pub static FENCED_SET_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(FENCED_SET));
pub static DEL_IF_EQUAL_ANNOUNCE_SCRIPT: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(DEL_IF_EQUAL_ANNOUNCE));
/// `replicas: N`: the primary's `INFO replication`, run by a script on the
/// lock key so Redis Cluster routes it to the key's primary.
pub const INFO_REPLICATION: &str = "return redis.call('INFO', 'replication')";
pub static INFO_REPLICATION_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(INFO_REPLICATION));
pub static RENEW_OR_WHY_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(RENEW_OR_WHY));
