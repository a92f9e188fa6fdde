//! The token lock, redislock's: one key holding a random token (`SET NX
//! PX`), its scripts, and its operations: acquire (one attempt, run by the
//! wait loop), release, extend; with the options beyond redislock 1.3.0
//! (fencing, announced releases, replica acknowledgement).
//!
//! On a server that can compare without Lua (transport/dialect.rs: Valkey
//! 9.0+), release is `DELIFEQ`, extend `SET … IFEQ … PX`, the keeper's
//! renewal `SET … IFEQ … PX … GET`, and an announced release `DELIFEQ`
//! pipelined with its `PUBLISH`; the same data, so a scripted holder and a
//! Lua-free one exclude each other. Fencing keeps its script (the grant
//! and the counter must move together).
//!
//! Written against `redis::aio::ConnectionLike` and a [`Timer`] rather than
//! a concrete connection and clock, so the same code runs on either engine
//! (tokio thread or the JavaScript thread's own loop), and a cluster or
//! multi-server backend can reuse it.
//! Expected outcomes are values (`false` = not acquired / not ours any more);
//! only real failures are errors.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use redis::aio::ConnectionLike;
use redis::{Cmd, Value};

use crate::error::{Error, Result};
use crate::limits::{check_not_empty, invalid_timeout, is_positive_ms, not_positive_ms};
use crate::locks::renewal::{Lost, Renewal};
use crate::locks::replicas::{self, Replicas};
use crate::locks::resend::{resent, Resend};
use crate::transport::connection::SharedConnection;
use crate::transport::dialect::{unknown_command, Dialect, Speaks};
use crate::transport::lua::Lua;
use crate::waiting::cancel::Cancel;
use crate::waiting::retry::{retry, Attempt, Retries, Schedule};
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::{Source, Wakeups};

// redislock 1.3.0's scripts, byte for byte, and this crate's own for the
// options beyond it.

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

pub static DEL_IF_EQUAL_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(DEL_IF_EQUAL));
pub static PEXPIRE_IF_EQUAL_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(PEXPIRE_IF_EQUAL));
pub static FENCED_SET_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(FENCED_SET));
pub static DEL_IF_EQUAL_ANNOUNCE_SCRIPT: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(DEL_IF_EQUAL_ANNOUNCE));

/// The lease keeper's renewal of a token lock: sets KEYS[1]'s TTL to ARGV[2] ms if it still
/// holds token ARGV[1]. Returns 1 (renewed), 0 (the key is gone) or -1 (it
/// holds another token), so a loss says why in the same round trip.
pub const RENEW_OR_WHY: &str = "local v = redis.call('GET', KEYS[1])\nif v == ARGV[1] then\n  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\nend\nif v then\n  return -1\nend\nreturn 0";
pub static RENEW_OR_WHY_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(RENEW_OR_WHY));

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquireOptions {
    /// The lock's time to live, in ms (`SET ... PX ttl`).
    pub ttl_ms: u64,
    pub retries: Retries,
    /// Pause between attempts.
    pub delay: Duration,
}

fn check_key(key: &str) -> Result<()> {
    check_not_empty("key", key)
}

/// One `SET key token PX ttl NX`. `true` when the lock was taken.
pub async fn try_acquire<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
    ttl_ms: u64,
) -> Result<bool> {
    // Sized up front: the command is built once per attempt on the hot path.
    let mut set = Cmd::with_capacity(6, key.len() + token.len() + 32);
    set.arg("SET")
        .arg(key)
        .arg(token)
        .arg("PX")
        .arg(ttl_ms)
        .arg("NX");
    let reply: redis::RedisResult<Value> = set.query_async(conn).await;
    match reply {
        Ok(Value::Okay) => Ok(true),
        Ok(Value::SimpleString(s)) if s == "OK" => Ok(true),
        Ok(Value::Nil) => Ok(false),
        Ok(other) => Err(Error::Redis(format!("Unexpected reply to SET: {other:?}"))),
        Err(e) => Err(e.into()),
    }
}

/// Acquires `key` for `token`, retrying as `opts` says. `Ok(false)` when
/// every attempt found the lock held.
///
/// A `SET` that timed out may still have landed: before reporting the
/// timeout, the token is released on a best-effort basis.
pub async fn acquire<C: ConnectionLike>(
    conn: &mut C,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    opts: &AcquireOptions,
) -> Result<bool> {
    let granted = acquire_with(conn, timer, key, token, opts, Grant::default()).await?;
    Ok(granted.is_some())
}

/// What a grant does beyond redislock's `SET NX` (the options of
/// `createLock` that redislock 1.3.0 does not have).
#[derive(Clone, Copy, Default)]
pub struct Grant<'a> {
    /// `fencing: true`: the counter key (see `keys::companion`); each grant
    /// takes the next token from it in the same script.
    pub fencing: Option<&'a str>,
    /// `wakeOnRelease: true`: a waiter also wakes when a release is
    /// announced on this channel of this subscriber.
    pub wake: Option<(&'a Arc<Wakeups>, &'a str)>,
    /// An `AbortSignal`: once cancelled, no further attempt is made and a
    /// pause ends at once (the acquire returns `None`).
    pub cancel: Option<&'a Cancel>,
    /// `replicas: N`: a grant counts once N replicas acknowledged it
    /// (else it is released and the acquire fails with the shortfall).
    pub replicas: Option<Replicas>,
    /// The server's [`Dialect`]: learned before the first attempt (so a
    /// user who may run no script there is told now, not by the release),
    /// and how a grant is undone. None: scripts.
    pub dialect: Option<&'a Dialect>,
}

/// The dialect of a grant made without one: scripts, never asked.
static SCRIPTED: Dialect = Dialect::scripts();

/// A grant: when its winning attempt was sent (the lease runs from no
/// earlier than that), its fencing token, if any, and how many attempts
/// it took.
#[derive(Clone, Copy, Debug)]
pub struct Granted {
    pub sent: Instant,
    pub fencing: Option<u64>,
    pub attempts: u64,
}

/// [`acquire`] with the options of [`Grant`]. `None` when every attempt
/// found the lock held (or the wait was cancelled). Retries, wake-ups and
/// the cancel follow `retry::retry`.
pub async fn acquire_with<C: ConnectionLike>(
    conn: &mut C,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    opts: &AcquireOptions,
    grant: Grant<'_>,
) -> Result<Option<Granted>> {
    check_key(key)?;
    if !is_positive_ms(opts.ttl_ms) {
        return Err(invalid_timeout(opts.ttl_ms));
    }
    if let Some(dialect) = grant.dialect {
        dialect.of(conn).await?;
    }
    if let Some(want) = grant.replicas {
        // More replicas than the primary has can never be met: refuse
        // before writing anything.
        replicas::check_available(conn, want, key).await?;
    }
    let schedule = Schedule {
        retries: opts.retries,
        delay: opts.delay,
        jitter: Duration::ZERO,
    };
    let wake = grant.wake.as_ref().map(|(wakeups, channel)| {
        (
            std::slice::from_ref(*wakeups),
            std::slice::from_ref(channel),
        )
    });
    let mut one = OneServer {
        conn,
        key,
        token,
        ttl_ms: opts.ttl_ms,
        grant,
    };
    let waited = retry(&mut one, timer, &schedule, &|| 0.0, wake, grant.cancel).await?;
    let attempts = waited.attempts;
    Ok(waited.outcome.ok().map(|g| Granted { attempts, ..g }))
}

/// An attempt on one server (see [`attempt_with`]).
struct OneServer<'a, C> {
    conn: &'a mut C,
    key: &'a str,
    token: &'a str,
    ttl_ms: u64,
    grant: Grant<'a>,
}

impl<C: ConnectionLike> Attempt for OneServer<'_, C> {
    type Won = Granted;
    type Lost = ();

    async fn attempt(&mut self) -> Result<std::result::Result<Granted, ()>> {
        let got = attempt_with(self.conn, self.key, self.token, self.ttl_ms, self.grant).await?;
        Ok(got.ok_or(()))
    }
}

/// One attempt of [`acquire_with`]; with `replicas`, a grant is confirmed
/// by `WAIT` or released again.
async fn attempt_with<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
    ttl_ms: u64,
    grant: Grant<'_>,
) -> Result<Option<Granted>> {
    let got = attempt_raw(conn, key, token, ttl_ms, grant).await?;
    if let (Some(g), Some(want)) = (got, grant.replicas) {
        if let Err(e) = replicas::wait_for(conn, want).await {
            let _ = release(conn, grant.dialect.unwrap_or(&SCRIPTED), key, token).await;
            return Err(e);
        }
        return Ok(Some(g));
    }
    Ok(got)
}

/// One attempt, with [`acquire`]'s rules after a broken connection (try
/// again; a key already carrying our token is ours) and a timeout
/// (best-effort release, then the error).
async fn attempt_raw<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
    ttl_ms: u64,
    grant: Grant<'_>,
) -> Result<Option<Granted>> {
    let sent = Instant::now();
    let Some(counter) = grant.fencing else {
        let mut attempt = try_acquire(conn, key, token, ttl_ms).await;
        if matches!(attempt, Err(Error::Connection(_))) {
            attempt = retry_acquire(conn, key, token, ttl_ms).await;
        }
        return match attempt {
            Ok(true) => Ok(Some(Granted {
                sent,
                fencing: None,
                attempts: 1,
            })),
            Ok(false) => Ok(None),
            Err(err @ Error::Timeout(_)) => {
                let _ = release_after_timeout(conn, grant.dialect, key, token).await;
                Err(err)
            }
            Err(err) => Err(err),
        };
    };
    let mut attempt = fenced_set(conn, key, counter, token, ttl_ms).await;
    if matches!(attempt, Err(Error::Connection(_))) {
        attempt = match fenced_set(conn, key, counter, token, ttl_ms).await {
            // The first try may have landed: then the key carries our token
            // and, as nobody else can take the lock meanwhile, the counter
            // still holds the token it issued us.
            Ok(None) => {
                let holder: Option<String> = redis::cmd("GET").arg(key).query_async(conn).await?;
                if holder.as_deref() == Some(token) {
                    let n: Option<u64> = redis::cmd("GET").arg(counter).query_async(conn).await?;
                    Ok(n)
                } else {
                    Ok(None)
                }
            }
            other => other,
        };
    }
    match attempt {
        Ok(fencing) => Ok(fencing.map(|n| Granted {
            sent,
            fencing: Some(n),
            attempts: 1,
        })),
        Err(err @ Error::Timeout(_)) => {
            let _ = release_after_timeout(conn, grant.dialect, key, token).await;
            Err(err)
        }
        Err(err) => Err(err),
    }
}

/// One [`FENCED_SET`](FENCED_SET): the token issued, or
/// `None` when the lock is held.
async fn fenced_set<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    counter: &str,
    token: &str,
    ttl_ms: u64,
) -> Result<Option<u64>> {
    let n: i64 = FENCED_SET_SCRIPT
        .eval(
            conn,
            (5, key.len() + counter.len() + token.len() + 24),
            |cmd| {
                cmd.arg(2).arg(key).arg(counter).arg(token).arg(ttl_ms);
            },
        )
        .await?;
    Ok(u64::try_from(n).ok().filter(|n| *n > 0))
}

/// [`release`] that also announces the release on `channel` (holders
/// created with `wakeOnRelease`), in the same script, with the command the
/// waiters' `source` hears (`SPUBLISH` for sharded pub/sub on Redis Cluster
/// 7+, else `PUBLISH`).
///
/// Without Lua the `DELIFEQ` and the announcement go out pipelined, and the
/// announcement goes out even when nothing was deleted: a waiter woken for
/// nothing tries once and sleeps again (a script would have to check first;
/// two round trips would slow every release).
pub async fn release_announced<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    key: &str,
    token: &str,
    channel: &str,
    source: Source,
) -> Result<bool> {
    check_key(key)?;
    let publish = source.publish();
    let step = (key, token, None, Some((channel, publish)));
    if let Some(done) = compare_without_lua_resent(conn, dialect, step, Resend::Removes).await? {
        return Ok(done);
    }
    match announce_once(conn, key, token, channel, publish).await {
        Err(broken @ Error::Connection(_)) => {
            let again = announce_once(conn, key, token, channel, publish).await;
            resent(broken, again, Resend::Removes)
        }
        reply => Ok(reply? == 1),
    }
}

async fn announce_once<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
    channel: &str,
    publish: &str,
) -> Result<i64> {
    let size = (5, key.len() + token.len() + channel.len() + 16);
    Ok(DEL_IF_EQUAL_ANNOUNCE_SCRIPT
        .eval(conn, size, |cmd| {
            cmd.arg(1).arg(key).arg(token).arg(channel).arg(publish);
        })
        .await?)
}

/// A second `SET NX` after a broken connection. The first one may have
/// landed before the connection broke, so a held key that carries our own
/// token counts as acquired.
async fn retry_acquire<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
    ttl_ms: u64,
) -> Result<bool> {
    if try_acquire(conn, key, token, ttl_ms).await? {
        return Ok(true);
    }
    let holder: Option<String> = redis::cmd("GET").arg(key).query_async(conn).await?;
    Ok(holder.as_deref() == Some(token))
}

/// Best-effort clean-up after a `SET` that timed out: plain `EVAL` (not
/// `EVALSHA`, whose NOSCRIPT fallback cannot run while Redis is stalled),
/// queued on the same connection right behind the `SET`, so it runs after
/// it even if Redis was merely slow.
async fn release_after_timeout<C: ConnectionLike>(
    conn: &mut C,
    dialect: Option<&Dialect>,
    key: &str,
    token: &str,
) -> Result<bool> {
    if dialect.and_then(Dialect::known) == Some(Speaks::CompareCommands) {
        let n: i64 = redis::cmd("DELIFEQ")
            .arg(key)
            .arg(token)
            .query_async(conn)
            .await?;
        return Ok(n == 1);
    }
    let n: i64 = redis::cmd("EVAL")
        .arg(DEL_IF_EQUAL)
        .arg(1)
        .arg(key)
        .arg(token)
        .query_async(conn)
        .await?;
    Ok(n == 1)
}

/// Deletes `key` if it still holds `token`. `false`: it did not (expired or
/// taken by someone else) and nothing was deleted.
pub async fn release<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    key: &str,
    token: &str,
) -> Result<bool> {
    check_key(key)?;
    let call = CompareAndAct {
        script: &DEL_IF_EQUAL_SCRIPT,
        key,
        token,
        ms: None,
        resend: Resend::Removes,
    };
    compare_and_act(conn, dialect, &call).await
}

/// Sets `key`'s TTL to `ms` if it still holds `token`. `false`: it did not.
pub async fn extend<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    key: &str,
    token: &str,
    ms: u64,
) -> Result<bool> {
    check_key(key)?;
    if !is_positive_ms(ms) {
        return Err(not_positive_ms("extension", ms));
    }
    let call = CompareAndAct {
        script: &PEXPIRE_IF_EQUAL_SCRIPT,
        key,
        token,
        ms: Some(ms),
        resend: Resend::Keeps,
    };
    compare_and_act(conn, dialect, &call).await
}

/// One of the compare-and-act scripts on one key: `EVALSHA hash 1 key
/// token [ms]` (see [`Lua::eval`]).
struct CompareAndAct<'a> {
    script: &'a Lua,
    key: &'a str,
    token: &'a str,
    ms: Option<u64>,
    /// What a resend that finds the key not ours may conclude.
    resend: Resend,
}

impl CompareAndAct<'_> {
    async fn run<C: ConnectionLike>(&self, conn: &mut C) -> redis::RedisResult<i64> {
        let size = (
            3 + usize::from(self.ms.is_some()),
            self.key.len() + self.token.len() + 32,
        );
        self.script
            .eval(conn, size, |cmd| {
                cmd.arg(1).arg(self.key).arg(self.token);
                if let Some(ms) = self.ms {
                    cmd.arg(ms);
                }
            })
            .await
    }
}

/// Runs a compare-and-act script: `true` when it acted (replied 1). If the
/// connection broke under it, tries once more: the broken connection has
/// been retired or is reconnecting, so the second try goes over a fresh one
/// (see [`resent`] for what its answer means).
async fn compare_and_act<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    call: &CompareAndAct<'_>,
) -> Result<bool> {
    let step = (call.key, call.token, call.ms, None);
    if let Some(done) = compare_without_lua_resent(conn, dialect, step, call.resend).await? {
        return Ok(done);
    }
    match call.run(conn).await.map_err(Error::from) {
        Err(broken @ Error::Connection(_)) => {
            let again = call.run(conn).await.map_err(Error::from);
            resent(broken, again, call.resend)
        }
        reply => Ok(reply? == 1),
    }
}

/// A compare step without Lua: `DELIFEQ key token` (1 or 0), or with
/// `ms`, `SET key token IFEQ token PX ms` (OK or nil, as 1 or 0).
async fn compare_once<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
    ms: Option<u64>,
) -> redis::RedisResult<i64> {
    match ms {
        None => {
            let mut cmd = Cmd::with_capacity(3, key.len() + token.len() + 8);
            cmd.arg("DELIFEQ").arg(key).arg(token);
            cmd.query_async(conn).await
        }
        Some(ms) => {
            let mut cmd = Cmd::with_capacity(7, key.len() + 2 * token.len() + 32);
            cmd.arg("SET")
                .arg(key)
                .arg(token)
                .arg("IFEQ")
                .arg(token)
                .arg("PX")
                .arg(ms);
            let set: Value = cmd.query_async(conn).await?;
            Ok(i64::from(set != Value::Nil))
        }
    }
}

/// `DELIFEQ key token` with the release's announcement (`publish channel
/// 1`) pipelined after it: the delete's 1 or 0.
async fn announce_once_lua_free<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
    channel: &str,
    publish: &str,
) -> redis::RedisResult<i64> {
    let mut pipe = redis::pipe();
    pipe.cmd("DELIFEQ").arg(key).arg(token);
    pipe.cmd(publish).arg(channel).arg("1").ignore();
    pipe.query_async::<(i64,)>(conn).await.map(|(n,)| n)
}

/// One compare step, without Lua where the server can, for another lock
/// kept under one key by one owner (redis-semaphore's `Mutex`): a release
/// (`ms` None; with `announce` = (channel, publish command), announced)
/// or a refresh to `ms`. Its 1 or 0, or `None` when the server does not
/// speak the commands (the caller runs its own script). Sent once: a
/// broken connection is the caller's to resend.
pub async fn compare_without_lua<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    key: &str,
    token: &str,
    ms: Option<u64>,
    announce: Option<(&str, &str)>,
) -> Result<Option<i64>> {
    if dialect.of(conn).await? != Speaks::CompareCommands {
        return Ok(None);
    }
    let reply = match announce {
        Some((channel, publish)) => {
            announce_once_lua_free(conn, key, token, channel, publish).await
        }
        None => compare_once(conn, key, token, ms).await,
    };
    match reply {
        Ok(n) => Ok(Some(n)),
        Err(e) if unknown_command(&e) => {
            dialect.forget();
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// One Lua-free step: key, token, the refresh's ms (none: a release) and
/// the release's announcement (channel, publish command).
type LuaFreeStep<'a> = (&'a str, &'a str, Option<u64>, Option<(&'a str, &'a str)>);

/// [`compare_without_lua`] sent once more after a broken connection, the
/// second answer read as [`resent`] says: `None` when the server does not
/// speak the commands (the caller runs its script).
async fn compare_without_lua_resent<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    (key, token, ms, announce): LuaFreeStep<'_>,
    resend: Resend,
) -> Result<Option<bool>> {
    match compare_without_lua(conn, dialect, key, token, ms, announce).await {
        Err(broken @ Error::Connection(_)) => {
            let again = compare_without_lua(conn, dialect, key, token, ms, announce).await;
            // A server that stopped speaking them meanwhile: not known.
            let again = again.and_then(|n| n.ok_or_else(|| broken.clone()));
            resent(broken, again, resend).map(Some)
        }
        reply => Ok(reply?.map(|n| n == 1)),
    }
}

/// The lease keeper's family tag for a token lock (redislock's, and the
/// quorum and node-redlock locks named by their first key and server).
pub const KEPT: &str = "token";

/// A token lock kept by the lease keeper: `key` holding `token` on
/// `server`, renewed by [`RENEW_OR_WHY`] (a loss says why in the same
/// round trip).
pub struct Kept {
    pub server: Arc<SharedConnection>,
    pub key: String,
    pub token: String,
}

impl Renewal for Kept {
    fn renew(&self, lease_ms: u64) -> BoxFuture<'_, Result<Option<Lost>>> {
        Box::pin(async move {
            let mut conn = self.server.get().await?;
            let dialect = self.server.dialect();
            if dialect.of(&mut conn).await? == Speaks::CompareCommands {
                // The old value tells why a renewal did not happen.
                let mut set = Cmd::with_capacity(8, self.key.len() + 2 * self.token.len() + 32);
                set.arg("SET")
                    .arg(&self.key)
                    .arg(&self.token)
                    .arg("IFEQ")
                    .arg(&self.token)
                    .arg("PX")
                    .arg(lease_ms)
                    .arg("GET");
                match set.query_async::<Option<Vec<u8>>>(&mut conn).await {
                    Ok(Some(old)) if old == self.token.as_bytes() => return Ok(None),
                    Ok(Some(_)) => return Ok(Some(Lost::Taken)),
                    Ok(None) => return Ok(Some(Lost::Expired)),
                    Err(e) if unknown_command(&e) => dialect.forget(),
                    Err(e) => return Err(e.into()),
                }
            }
            let size = (3, self.key.len() + self.token.len() + 24);
            let n: i64 = RENEW_OR_WHY_SCRIPT
                .eval(&mut conn, size, |cmd| {
                    cmd.arg(1).arg(&self.key).arg(&self.token).arg(lease_ms);
                })
                .await?;
            Ok(match n {
                1 => None,
                0 => Some(Lost::Expired),
                _ => Some(Lost::Taken),
            })
        })
    }
}

/// A fresh random lock token (UUID v4: 122 random bits).
pub fn new_token() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_uuid_v4() {
        let a = new_token();
        let b = new_token();
        assert_eq!(a.len(), 36);
        assert_ne!(a, b);
        assert_eq!(a.as_bytes()[14], b'4');
    }
}
