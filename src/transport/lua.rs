//! The one way a Lua script is run: by `EVALSHA`, and when Redis answers
//! NOSCRIPT, by `EVAL` with the body, as redislock's redis-evalsha does.
//! The scripts themselves belong to their lock kinds (`locks::token` has
//! redislock 1.3.0's byte for byte, `locks::reentrant` the Redisson face's).

use std::sync::atomic::{AtomicU64, Ordering};

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, FromRedisValue, Script, ServerErrorKind, Value};

/// NOSCRIPT answers seen so far, by any script on any connection: a record
/// that a server has a script (src/node/loaded.rs) holds only while this
/// has not moved (after a `SCRIPT FLUSH` the next release or extend on that
/// server sees one).
static NOSCRIPTS: AtomicU64 = AtomicU64::new(0);

/// How many NOSCRIPT answers have been seen.
pub fn noscripts_seen() -> u64 {
    NOSCRIPTS.load(Ordering::Acquire)
}

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
                NOSCRIPTS.fetch_add(1, Ordering::AcqRel);
                build("EVAL", &self.body).query_async(conn).await
            }
            other => other,
        }
    }

    /// Runs the script on `keys` and `args` (as [`Lua::eval`]: numkeys, the
    /// keys, the arguments), its reply as Redis gave it.
    pub async fn run<C: ConnectionLike>(
        &self,
        conn: &mut C,
        keys: &[&str],
        args: &[&[u8]],
    ) -> redis::RedisResult<Value> {
        let bytes = keys.iter().map(|k| k.len()).sum::<usize>()
            + args.iter().map(|a| a.len()).sum::<usize>()
            + 16;
        self.eval(conn, (1 + keys.len() + args.len(), bytes), |cmd| {
            cmd.arg(keys.len());
            for k in keys {
                cmd.arg(*k);
            }
            for a in args {
                cmd.arg(*a);
            }
        })
        .await
    }
}
