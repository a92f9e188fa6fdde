//! redis-semaphore 5.8's locks (`require('redislock-rs/semaphore')`), on its
//! data layout and with its scripts, so a redis-semaphore
//! process and this one count against the same `maxCount` and exclude each
//! other (the acquires pass their numbers as text, with the same effects:
//! see [`SEMAPHORE_ACQUIRE`]):
//! - a mutex: the string `mutex:<key>` holding the identifier (`SET NX
//!   PX`), refreshed by `PEXPIRE` and deleted while it holds ours;
//! - a semaphore: the sorted set `semaphore:<key>` of holders scored by
//!   their last acquire or refresh time (ms since the epoch); entries older
//!   than the lock timeout are dropped before counting, a holder takes a
//!   place while fewer than `limit` are held;
//! - a multi-semaphore: `permits` places in the same set at once, as the
//!   members `<identifier>_0` … `<identifier>_<permits − 1>`.
//!
//! Scores are the caller's clock (`now_ms`), as redis-semaphore's are: its
//! scripts take `now` as an argument, and a fleet half on redis-semaphore
//! must agree on one clock, so this one is the machine's, like theirs.
//!
//! The acquire retries are the one wait loop's (waiting/retry.rs): every
//! `retry_interval`, until `acquireAttemptsLimit` attempts were made or
//! `acquireTimeout` has passed.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{select, BoxFuture, Either};
use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::limits::check_not_empty;
use crate::locks::fanout::{majority, on_all, Outcome, Settle};
use crate::locks::renewal::{Lost, Renewal};
use crate::locks::resend::{resent, Resend};
use crate::locks::token;
use crate::transport::connection::SharedConnection;
use crate::transport::dialect::{Dialect, Dialects};
use crate::transport::lua::Lua;
use crate::waiting::cancel::Cancel;
use crate::waiting::retry::{retry, Attempt, Retries, Schedule};
use crate::waiting::timer::{wall_ms, Timer, TokioTimer};
use crate::waiting::wakeups::Wakeups;

/// redis-semaphore's mutex refresh (`expireIfEqualLua`), byte for byte.
pub const MUTEX_REFRESH: &str = "\n  local key = KEYS[1]\n  local identifier = ARGV[1]\n  local lockTimeout = ARGV[2]\n\n  local value = redis.call('get', key)\n\n  if value == identifier then\n    redis.call('pexpire', key, lockTimeout)\n    return 1\n  end\n\n  return 0\n  ";

/// redis-semaphore's mutex release (`delIfEqualLua`), byte for byte.
pub const MUTEX_RELEASE: &str = "\n  local key = KEYS[1]\n  local identifier = ARGV[1]\n\n  if redis.call('get', key) == identifier then\n    return redis.call('del', key)\n  end\n\n  return 0\n  ";

/// redis-semaphore's semaphore acquire, its rule and its effects, with its
/// numbers passed through as text: ARGV = limit, identifier, lockTimeout,
/// now, now − lockTimeout. Theirs (`THEIR_SEMAPHORE_ACQUIRE` in the tests)
/// turns `now` and `lockTimeout` into Lua numbers and Redis turns each one
/// it is handed back into text (`%.17g`): a fifth of the script's time
/// (benchmark/NOTES.md §30). For the integers this face sends (safe
/// integers, ≤ 16 digits) the text is the same, and so are the set's
/// members, scores and TTL (tests/core.rs checks them against theirs).
pub const SEMAPHORE_ACQUIRE: &str = "local key = KEYS[1]\nredis.call('zremrangebyscore', key, '-inf', ARGV[5])\nif redis.call('zcard', key) < tonumber(ARGV[1]) then\n  redis.call('zadd', key, ARGV[4], ARGV[2])\n  redis.call('pexpire', key, ARGV[3])\n  return 1\nend\nreturn 0";

/// redis-semaphore's semaphore refresh, byte for byte.
pub const SEMAPHORE_REFRESH: &str = "\n  local key = KEYS[1]\n  local limit = tonumber(ARGV[1])\n  local identifier = ARGV[2]\n  local lockTimeout = tonumber(ARGV[3])\n  local now = tonumber(ARGV[4])\n  local expiredTimestamp = now - lockTimeout\n\n  redis.call('zremrangebyscore', key, '-inf', expiredTimestamp)\n\n  if redis.call('zscore', key, identifier) then\n    redis.call('zadd', key, now, identifier)\n    redis.call('pexpire', key, lockTimeout)\n    return 1\n  else\n    return 0\n  end";

/// redis-semaphore's multi-semaphore acquire, as [`SEMAPHORE_ACQUIRE`] is
/// its semaphore acquire: ARGV = limit, permits, identifier, lockTimeout,
/// now, now − lockTimeout.
pub const MULTI_ACQUIRE: &str = "local key = KEYS[1]\nlocal permits = tonumber(ARGV[2])\nlocal identifier = ARGV[3]\nlocal now = ARGV[5]\nredis.call('zremrangebyscore', key, '-inf', ARGV[6])\nif (redis.call('zcard', key) + permits) <= tonumber(ARGV[1]) then\n  local args = {}\n  for i=0, permits - 1 do\n    table.insert(args, now)\n    table.insert(args, identifier .. '_' .. i)\n  end\n  redis.call('zadd', key, unpack(args))\n  redis.call('pexpire', key, ARGV[4])\n  return 1\nend\nreturn 0";

/// redis-semaphore's multi-semaphore refresh, byte for byte.
pub const MULTI_REFRESH: &str = "\n  local key = KEYS[1]\n  local limit = tonumber(ARGV[1])\n  local permits = tonumber(ARGV[2])\n  local identifier = ARGV[3]\n  local lockTimeout = tonumber(ARGV[4])\n  local now = tonumber(ARGV[5])\n  local expiredTimestamp = now - lockTimeout\n  local args = {}\n\n  redis.call('zremrangebyscore', key, '-inf', expiredTimestamp)\n\n  if redis.call('zscore', key, identifier .. '_0') then\n    for i=0, permits - 1 do\n      table.insert(args, now)\n      table.insert(args, identifier .. '_' .. i)\n    end\n    redis.call('zadd', key, unpack(args))\n    redis.call('pexpire', key, lockTimeout)\n    return 1\n  else\n    return 0\n  end";

/// redis-semaphore's multi-semaphore release, byte for byte.
pub const MULTI_RELEASE: &str = "\n  local key = KEYS[1]\n  local permits = tonumber(ARGV[1])\n  local identifier = ARGV[2]\n  local args = {}\n\n  for i=0, permits - 1 do\n    table.insert(args, identifier .. '_' .. i)\n  end\n\n  return redis.call('zrem', key, unpack(args))\n";

/// `wakeOnRelease` (ours): a semaphore holder's release (`ZREM` of ARGV[1])
/// that also announces it with command ARGV[3] (`PUBLISH` or `SPUBLISH`)
/// on channel ARGV[2], in the same round trip. Returns 1 or 0.
pub const ANNOUNCED_RELEASE: &str = "if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then\n  redis.call(ARGV[3], ARGV[2], '1')\n  return 1\nend\nreturn 0";

/// `wakeOnRelease` (ours): the multi-semaphore release (the members
/// `ARGV[2]_0 … _ARGV[1]−1`) that also announces it with command ARGV[4]
/// on channel ARGV[3]. Returns how many were removed.
pub const ANNOUNCED_MULTI_RELEASE: &str = "local args = {}\nfor i=0, tonumber(ARGV[1]) - 1 do\n  table.insert(args, ARGV[2] .. '_' .. i)\nend\nlocal n = redis.call('zrem', KEYS[1], unpack(args))\nif n > 0 then\n  redis.call(ARGV[4], ARGV[3], '1')\nend\nreturn n";

struct Scripts {
    announced_release: Lua,
    announced_multi_release: Lua,
    mutex_refresh: Lua,
    mutex_release: Lua,
    acquire: Lua,
    refresh: Lua,
    multi_acquire: Lua,
    multi_refresh: Lua,
    multi_release: Lua,
}

static SCRIPTS: std::sync::LazyLock<Scripts> = std::sync::LazyLock::new(|| Scripts {
    announced_release: Lua::new(ANNOUNCED_RELEASE),
    announced_multi_release: Lua::new(ANNOUNCED_MULTI_RELEASE),
    mutex_refresh: Lua::new(MUTEX_REFRESH),
    mutex_release: Lua::new(MUTEX_RELEASE),
    acquire: Lua::new(SEMAPHORE_ACQUIRE),
    refresh: Lua::new(SEMAPHORE_REFRESH),
    multi_acquire: Lua::new(MULTI_ACQUIRE),
    multi_refresh: Lua::new(MULTI_REFRESH),
    multi_release: Lua::new(MULTI_RELEASE),
});

/// Which of redis-semaphore's locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `Mutex`: one holder.
    Mutex,
    /// `Semaphore`: up to `limit` holders.
    Semaphore { limit: u32 },
    /// `MultiSemaphore`: `permits` of the `limit` places per holder.
    Multi { limit: u32, permits: u32 },
}

impl Kind {
    /// The kind from JavaScript's numbers: `permits` 0 is a semaphore
    /// (`limit` > 0) or, with `limit` 0 too, a mutex.
    pub fn new(limit: u32, permits: u32) -> Result<Kind> {
        Ok(match (limit, permits) {
            (0, 0) => Kind::Mutex,
            (0, _) => {
                return Err(Error::InvalidArgument(
                    "a multi-semaphore needs a limit".into(),
                ))
            }
            (limit, 0) => Kind::Semaphore { limit },
            (limit, permits) => Kind::Multi { limit, permits },
        })
    }
}

/// One holder: the lock's Redis key, the holder's identifier and its
/// lease (`lockTimeout`, ms).
#[derive(Clone, Copy, Debug)]
pub struct Holder<'a> {
    pub key: &'a str,
    pub identifier: &'a str,
    pub ttl_ms: u64,
}

fn check(h: Holder<'_>) -> Result<()> {
    check_not_empty("key", h.key)?;
    check_not_empty("identifier", h.identifier)
}

/// A script that answers 1 (done) or 0, or a count.
async fn int<C: ConnectionLike>(
    conn: &mut C,
    script: &Lua,
    h: Holder<'_>,
    args: &[u64],
    then: &[&str],
) -> Result<i64> {
    let bytes = h.key.len() + h.identifier.len() + 24 * (args.len() + 1);
    Ok(script
        .eval(conn, (3 + args.len() + then.len(), bytes), |cmd| {
            cmd.arg(1).arg(h.key).arg(args).arg(h.identifier).arg(then);
        })
        .await?)
}

/// One attempt: `true` when `h` now holds its place(s). Sent again once
/// after a broken connection; a second try that is refused finds out
/// whether the first one landed (the place is then ours).
pub async fn try_acquire<C: ConnectionLike>(
    conn: &mut C,
    kind: Kind,
    h: Holder<'_>,
) -> Result<bool> {
    check(h)?;
    match acquire_once(conn, kind, h).await {
        Err(Error::Connection(_)) => {
            Ok(acquire_once(conn, kind, h).await? || holds(conn, kind, h).await?)
        }
        got => got,
    }
}

async fn acquire_once<C: ConnectionLike>(conn: &mut C, kind: Kind, h: Holder<'_>) -> Result<bool> {
    // The acquire scripts' last arguments: lockTimeout, now and the bound
    // at or before which entries have expired (signed: a lease longer than
    // the epoch's age gives a negative bound, as theirs would).
    let stamps = || {
        let now = wall_ms();
        let expired = i128::from(now) - i128::from(h.ttl_ms);
        [h.ttl_ms.to_string(), now.to_string(), expired.to_string()]
    };
    Ok(match kind {
        Kind::Mutex => token::try_acquire(conn, h.key, h.identifier, h.ttl_ms).await?,
        Kind::Semaphore { limit } => {
            let [ttl, now, expired] = stamps();
            let after = [ttl.as_str(), now.as_str(), expired.as_str()];
            int(conn, &SCRIPTS.acquire, h, &[u64::from(limit)], &after).await? == 1
        }
        Kind::Multi { limit, permits } => {
            let [ttl, now, expired] = stamps();
            let after = [ttl.as_str(), now.as_str(), expired.as_str()];
            let args = [u64::from(limit), u64::from(permits)];
            int(conn, &SCRIPTS.multi_acquire, h, &args, &after).await? == 1
        }
    })
}

/// Whether `h` holds its place(s) now.
async fn holds<C: ConnectionLike>(conn: &mut C, kind: Kind, h: Holder<'_>) -> Result<bool> {
    Ok(match kind {
        Kind::Mutex => {
            let v: Option<String> = redis::cmd("GET").arg(h.key).query_async(conn).await?;
            v.as_deref() == Some(h.identifier)
        }
        Kind::Semaphore { .. } => {
            let score: Option<f64> = redis::cmd("ZSCORE")
                .arg(h.key)
                .arg(h.identifier)
                .query_async(conn)
                .await?;
            score.is_some()
        }
        Kind::Multi { .. } => {
            let score: Option<f64> = redis::cmd("ZSCORE")
                .arg(h.key)
                .arg(format!("{}_0", h.identifier))
                .query_async(conn)
                .await?;
            score.is_some()
        }
    })
}

/// Sets `h`'s lease again (`lockTimeout` from now) while it still holds
/// its place(s): `false` when it no longer does (the lock is lost). Sent
/// again once after a broken connection.
pub async fn refresh<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    kind: Kind,
    h: Holder<'_>,
) -> Result<bool> {
    check(h)?;
    match refresh_once(conn, dialect, kind, h).await {
        Err(broken @ Error::Connection(_)) => {
            let again = refresh_once(conn, dialect, kind, h).await;
            resent(broken, again, Resend::Keeps)
        }
        reply => Ok(reply? == 1),
    }
}

async fn refresh_once<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    kind: Kind,
    h: Holder<'_>,
) -> Result<i64> {
    if kind == Kind::Mutex {
        // Without Lua where the server can: SET … IFEQ … PX.
        let (key, id, ms) = (h.key, h.identifier, Some(h.ttl_ms));
        if let Some(n) = token::compare_without_lua(conn, dialect, key, id, ms, None).await? {
            return Ok(n);
        }
    }
    let (ttl, now) = (h.ttl_ms.to_string(), wall_ms().to_string());
    let after = [ttl.as_str(), now.as_str()];
    match kind {
        Kind::Mutex => int(conn, &SCRIPTS.mutex_refresh, h, &[], &[ttl.as_str()]).await,
        Kind::Semaphore { limit } => {
            int(conn, &SCRIPTS.refresh, h, &[u64::from(limit)], &after).await
        }
        Kind::Multi { limit, permits } => {
            let args = [u64::from(limit), u64::from(permits)];
            int(conn, &SCRIPTS.multi_refresh, h, &args, &after).await
        }
    }
}

/// `wakeOnRelease`: a release announces itself on `channel` with
/// `publish` (`PUBLISH`, or `SPUBLISH` on a Redis Cluster 7+).
#[derive(Clone, Copy, Debug)]
pub struct Announce<'a> {
    pub channel: &'a str,
    pub publish: &'a str,
}

/// Gives `h`'s place(s) back (announcing it if `announce`): `false` when it
/// held none. Sent again once after a broken connection (a second try that
/// finds nothing cannot tell whether the first removed it: that is
/// reported as the broken connection).
pub async fn release<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    kind: Kind,
    h: Holder<'_>,
    announce: Option<Announce<'_>>,
) -> Result<bool> {
    check(h)?;
    match release_once(conn, dialect, kind, h, announce).await {
        Err(broken @ Error::Connection(_)) => {
            let again = release_once(conn, dialect, kind, h, announce).await;
            resent(broken, again, Resend::Removes)
        }
        reply => Ok(reply? == 1),
    }
}

/// 1 when something was given back, else 0.
async fn release_once<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    kind: Kind,
    h: Holder<'_>,
    announce: Option<Announce<'_>>,
) -> Result<i64> {
    if kind == Kind::Mutex {
        // Without Lua where the server can: DELIFEQ (and the announcement
        // pipelined after it).
        let then = announce.map(|a| (a.channel, a.publish));
        let (key, id) = (h.key, h.identifier);
        if let Some(n) = token::compare_without_lua(conn, dialect, key, id, None, then).await? {
            return Ok(n);
        }
    }
    let removed = match (kind, announce) {
        (Kind::Mutex, None) => int(conn, &SCRIPTS.mutex_release, h, &[], &[]).await?,
        (Kind::Mutex, Some(a)) => {
            let then = [a.channel, a.publish];
            int(conn, &token::DEL_IF_EQUAL_ANNOUNCE_SCRIPT, h, &[], &then).await?
        }
        (Kind::Semaphore { .. }, None) => {
            redis::cmd("ZREM")
                .arg(h.key)
                .arg(h.identifier)
                .query_async(conn)
                .await?
        }
        (Kind::Semaphore { .. }, Some(a)) => {
            let then = [a.channel, a.publish];
            int(conn, &SCRIPTS.announced_release, h, &[], &then).await?
        }
        (Kind::Multi { permits, .. }, None) => {
            int(conn, &SCRIPTS.multi_release, h, &[u64::from(permits)], &[]).await?
        }
        (Kind::Multi { permits, .. }, Some(a)) => {
            let then = [a.channel, a.publish];
            let args = [u64::from(permits)];
            int(conn, &SCRIPTS.announced_multi_release, h, &args, &then).await?
        }
    };
    Ok(i64::from(removed > 0))
}

/// How an acquire waits: redis-semaphore's `acquireAttemptsLimit` (`None`:
/// no limit), `acquireTimeout` and `retryInterval`.
#[derive(Clone, Copy, Debug)]
pub struct Waiting {
    pub attempts: Option<u64>,
    pub timeout: Duration,
    pub retry_interval: Duration,
    /// The connection's own bound on one reply (its command timeout): an
    /// attempt unanswered at the `acquireTimeout` is cut then only where
    /// that comes first (else the command's own timeout ends it sooner, and
    /// an attempt costs no timer of ours).
    pub command_timeout: Duration,
}

impl Waiting {
    /// Whether an acquire may pause between attempts (more than one
    /// attempt allowed): only then is a wake-up worth subscribing to.
    pub fn may_wait(&self) -> bool {
        self.attempts != Some(1)
    }
}

/// How an acquire ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acquired {
    pub granted: bool,
    pub attempts: u64,
}

/// One attempt of a one-server acquire. With an `acquireTimeout`, an
/// attempt still unanswered when it runs out (and at least
/// [`ANSWER_WITHIN`] after it was sent) ends the acquire with a timeout,
/// not at the command timeout: what it may have taken is given back first
/// (bounded by [`GIVE_BACK_WITHIN`]: a server that does not answer that
/// either lets the place expire by its lease).
struct Place<'a, C> {
    conn: &'a mut C,
    dialect: &'a Dialect,
    kind: Kind,
    holder: Holder<'a>,
    timer: &'a dyn Timer,
    /// When the `acquireTimeout` runs out, and the timeout (for the message).
    deadline: Option<(Instant, Duration)>,
    /// See [`Waiting::command_timeout`].
    command_timeout: Duration,
}

/// The least time an attempt is given to be answered, however little of
/// the `acquireTimeout` is left when it is sent.
const ANSWER_WITHIN: Duration = Duration::from_millis(100);

/// How long an attempt cut short at the `acquireTimeout` waits for its
/// give-back.
const GIVE_BACK_WITHIN: Duration = Duration::from_millis(50);

impl<C: ConnectionLike> Attempt for Place<'_, C> {
    type Won = ();
    type Lost = ();

    async fn attempt(&mut self) -> Result<std::result::Result<(), ()>> {
        let (kind, h) = (self.kind, self.holder);
        let cut_at = self.cut_at();
        let answered = {
            let attempt = try_acquire(self.conn, kind, h);
            match cut_at {
                None => Some(attempt.await),
                Some(left) => match select(pin!(attempt), self.timer.sleep(left)).await {
                    Either::Left((got, _)) => Some(got),
                    Either::Right(_) => None,
                },
            }
        };
        match answered {
            Some(got) => Ok(if got? { Ok(()) } else { Err(()) }),
            // Rare: boxed, so that every acquire's future stays small.
            None => Err(Box::pin(self.cut_short()).await),
        }
    }
}

impl<C: ConnectionLike> Place<'_, C> {
    /// How long this attempt may go unanswered before the `acquireTimeout`
    /// cuts it: `None` without one, or where the command's own timeout
    /// comes first.
    fn cut_at(&self) -> Option<Duration> {
        let (deadline, _) = self.deadline?;
        let left = deadline
            .saturating_duration_since(self.timer.now())
            .max(ANSWER_WITHIN);
        (left < self.command_timeout).then_some(left)
    }

    /// An attempt cut short: what it may have taken is given back (bounded),
    /// and the acquire ends with a timeout.
    async fn cut_short(&mut self) -> Error {
        let (kind, h) = (self.kind, self.holder);
        let give_back = release(self.conn, self.dialect, kind, h, None);
        let _ = select(pin!(give_back), self.timer.sleep(GIVE_BACK_WITHIN)).await;
        let timeout = self.deadline.map_or(Duration::ZERO, |(_, t)| t);
        Error::Timeout(format!(
            "Redis did not answer the acquire of {} within its acquireTimeout ({} ms)",
            h.key,
            timeout.as_millis()
        ))
    }
}

/// The wait loop's schedule for `waiting`; `None` when no attempt may be
/// made at all (a zero timeout or attempts limit, as theirs).
fn schedule(timer: &dyn Timer, waiting: Waiting) -> Option<Schedule> {
    if waiting.timeout.is_zero() || waiting.attempts == Some(0) {
        return None;
    }
    let deadline = timer.now().checked_add(waiting.timeout);
    let retries = match (waiting.attempts, deadline) {
        (Some(n), Some(d)) => Retries::Bounded(n - 1, d),
        (Some(n), None) => Retries::Count(n - 1),
        (None, Some(d)) => Retries::Until(d),
        (None, None) => Retries::Forever,
    };
    Some(Schedule {
        retries,
        delay: waiting.retry_interval,
        jitter: Duration::ZERO,
    })
}

/// Takes `h`'s place(s), trying every `retry_interval` until granted, the
/// attempts are spent, the timeout has passed or `cancel` fires. No
/// attempt at all with a zero timeout or attempts limit (as theirs).
#[allow(clippy::too_many_arguments)]
pub async fn acquire<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    timer: &dyn Timer,
    kind: Kind,
    h: Holder<'_>,
    waiting: Waiting,
    wake: Option<(&[Arc<Wakeups>], &[&str])>,
    cancel: Option<&Cancel>,
) -> Result<Acquired> {
    check(h)?;
    // Learned before the first attempt: a user who may run no script on
    // a server without compare commands is told now, not by the release.
    dialect.of(conn).await?;
    let Some(schedule) = schedule(timer, waiting) else {
        return Ok(Acquired {
            granted: false,
            attempts: 0,
        });
    };
    let deadline = schedule.retries.deadline().map(|d| (d, waiting.timeout));
    let mut place = Place {
        conn,
        dialect,
        kind,
        holder: h,
        timer,
        deadline,
        command_timeout: waiting.command_timeout,
    };
    let waited = retry(&mut place, timer, &schedule, &|| 0.0, wake, cancel).await?;
    Ok(Acquired {
        granted: waited.outcome.is_ok(),
        attempts: waited.attempts,
    })
}

/// How a Redlock variant's operations run: `n` independent servers
/// (`connect(i)` gives server `i`'s connection, each bounded by
/// `within`), granted on redis-semaphore's quorum (`Math.round((n + 1) /
/// 2)`, a majority).
pub struct Quorum<'a, 'd, F> {
    pub n: usize,
    pub connect: &'a F,
    /// Each server's dialect (a Mutex's steps without Lua where it can).
    pub dialect: Dialects<'a, 'd>,
    pub timer: &'a dyn Timer,
    pub within: Duration,
}

impl<F> Quorum<'_, '_, F> {
    fn needed(&self) -> usize {
        majority(self.n)
    }
}

/// On every server at once, how many did `op`.
async fn count<C, F, Fut, Op, OpFut>(q: &Quorum<'_, '_, F>, op: Op) -> (usize, Vec<bool>)
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
    Op: Fn(usize, C) -> OpFut,
    OpFut: Future<Output = Result<bool>>,
{
    let done: Vec<bool> = on_all(q.n, q.connect, q.timer, q.within, Settle::AllServers, op)
        .await
        .iter()
        .map(Outcome::ok)
        .collect();
    (done.iter().filter(|d| **d).count(), done)
}

struct QuorumPlace<'a, 'd, F> {
    q: &'a Quorum<'a, 'd, F>,
    kind: Kind,
    holder: Holder<'a>,
}

impl<C, F, Fut> Attempt for QuorumPlace<'_, '_, F>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    type Won = ();
    type Lost = ();

    async fn attempt(&mut self) -> Result<std::result::Result<(), ()>> {
        let (kind, h) = (self.kind, self.holder);
        let (got, _) = count(self.q, |_, mut c: C| async move {
            try_acquire(&mut c, kind, h).await
        })
        .await;
        if got >= self.q.needed() {
            return Ok(Ok(()));
        }
        // What this attempt took is given back everywhere before the next.
        release_quorum(self.q, kind, h, None).await;
        Ok(Err(()))
    }
}

/// The Redlock variants' acquire: each attempt on every server at once,
/// granted on a quorum, else given back everywhere; retried as
/// [`acquire`] retries.
pub async fn acquire_quorum<C, F, Fut>(
    q: &Quorum<'_, '_, F>,
    kind: Kind,
    h: Holder<'_>,
    waiting: Waiting,
    wake: Option<(&[Arc<Wakeups>], &[&str])>,
    cancel: Option<&Cancel>,
) -> Result<Acquired>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    check(h)?;
    let Some(schedule) = schedule(q.timer, waiting) else {
        return Ok(Acquired {
            granted: false,
            attempts: 0,
        });
    };
    let mut place = QuorumPlace { q, kind, holder: h };
    let waited = retry(&mut place, q.timer, &schedule, &|| 0.0, wake, cancel).await?;
    Ok(Acquired {
        granted: waited.outcome.is_ok(),
        attempts: waited.attempts,
    })
}

/// How a Redlock variant's refresh went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refreshed {
    /// On a quorum (and taken again where a server had lost it).
    Yes,
    /// Too many servers said it is not there: it was given back everywhere.
    No,
    /// Neither: too many servers did not answer in time (or failed). Nothing
    /// was given back; whether it still holds is not known.
    Unsure,
}

/// The Redlock variants' refresh: on every server at once; refreshed on a
/// quorum, the servers that had lost it take it again. Refused by so many
/// that no quorum can confirm it, it is given back everywhere and lost
/// ([`Refreshed::No`]); short of a quorum only because servers did not
/// answer, it is [`Refreshed::Unsure`] and the caller decides (the keeper
/// tries again while the lease may still run; a refresh JavaScript asked
/// for gives it back, as redis-semaphore does).
pub async fn refresh_quorum<C, F, Fut>(
    q: &Quorum<'_, '_, F>,
    kind: Kind,
    h: Holder<'_>,
) -> Result<Refreshed>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    check(h)?;
    let dialect = q.dialect;
    let op = |i, mut c: C| async move { refresh(&mut c, dialect(i), kind, h).await };
    let outcomes = on_all(q.n, q.connect, q.timer, q.within, Settle::AllServers, op).await;
    let done: Vec<bool> = outcomes.iter().map(Outcome::ok).collect();
    let got = done.iter().filter(|d| **d).count();
    if got < q.needed() {
        let refused = outcomes.iter().filter(|o| **o == Outcome::NotOurs).count();
        if refused <= q.n - q.needed() {
            return Ok(Refreshed::Unsure);
        }
        release_quorum(q, kind, h, None).await;
        return Ok(Refreshed::No);
    }
    if got < q.n {
        let done = &done;
        count(q, |i, mut c: C| async move {
            match done[i] {
                true => Ok(true),
                false => try_acquire(&mut c, kind, h).await,
            }
        })
        .await;
    }
    Ok(Refreshed::Yes)
}

/// The lease keeper's family tag for a redis-semaphore lock.
pub const KEPT: &str = "semaphore";

/// A redis-semaphore lock of `kind` kept by the lease keeper: `key` held
/// by `identifier`, refreshed by the kind's own script on one server
/// (`within` none), or on a quorum of `servers`, each answering within
/// `within`, restored where a server lost it, as redis-semaphore's Redlock
/// variants do.
pub struct Kept {
    pub servers: Vec<Arc<SharedConnection>>,
    pub within: Option<Duration>,
    pub kind: Kind,
    pub key: String,
    pub identifier: String,
}

impl Renewal for Kept {
    fn renew(&self, lease_ms: u64) -> BoxFuture<'_, Result<Option<Lost>>> {
        Box::pin(async move {
            let holder = Holder {
                key: &self.key,
                identifier: &self.identifier,
                ttl_ms: lease_ms,
            };
            let Some(within) = self.within else {
                let one = self.servers.first().ok_or_else(|| {
                    Error::InvalidArgument("a kept semaphore needs a server".into())
                })?;
                let mut conn = one.get().await?;
                let refreshed = refresh(&mut conn, one.dialect(), self.kind, holder).await?;
                return Ok((!refreshed).then_some(Lost::Expired));
            };
            let connect = |i: usize| self.servers[i].get();
            let q = Quorum {
                n: self.servers.len(),
                connect: &connect,
                dialect: &|i: usize| self.servers[i].dialect(),
                timer: &TokioTimer,
                within,
            };
            match refresh_quorum(&q, self.kind, holder).await? {
                Refreshed::Yes => Ok(None),
                Refreshed::No => Ok(Some(Lost::Expired)),
                // Servers slow or away: tried again while the lease may run.
                Refreshed::Unsure => Err(Error::Timeout(
                    "refresh not confirmed by a quorum in time".into(),
                )),
            }
        })
    }
}

/// The Redlock variants' release (announced on each server if
/// `announce`): on every server at once; how many gave something back
/// (failures are not reported, as theirs).
pub async fn release_quorum<C, F, Fut>(
    q: &Quorum<'_, '_, F>,
    kind: Kind,
    h: Holder<'_>,
    announce: Option<Announce<'_>>,
) -> usize
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let dialect = q.dialect;
    count(q, |i, mut c: C| async move {
        release(&mut c, dialect(i), kind, h, announce).await
    })
    .await
    .0
}

/// redis-semaphore 5.8.0's semaphore acquire, byte for byte: the oracle
/// [`SEMAPHORE_ACQUIRE`] is tested against (tests/core.rs).
#[doc(hidden)]
pub const THEIR_SEMAPHORE_ACQUIRE: &str = "\n  local key = KEYS[1]\n  local limit = tonumber(ARGV[1])\n  local identifier = ARGV[2]\n  local lockTimeout = tonumber(ARGV[3])\n  local now = tonumber(ARGV[4])\n  local expiredTimestamp = now - lockTimeout\n\n  redis.call('zremrangebyscore', key, '-inf', expiredTimestamp)\n\n  if redis.call('zcard', key) < limit then\n    redis.call('zadd', key, now, identifier)\n    redis.call('pexpire', key, lockTimeout)\n    return 1\n  else\n    return 0\n  end";

/// redis-semaphore 5.8.0's multi-semaphore acquire, byte for byte (the
/// oracle of [`MULTI_ACQUIRE`]).
#[doc(hidden)]
pub const THEIR_MULTI_ACQUIRE: &str = "\n  local key = KEYS[1]\n  local limit = tonumber(ARGV[1])\n  local permits = tonumber(ARGV[2])\n  local identifier = ARGV[3]\n  local lockTimeout = tonumber(ARGV[4])\n  local now = tonumber(ARGV[5])\n  local expiredTimestamp = now - lockTimeout\n  local args = {}\n\n  redis.call('zremrangebyscore', key, '-inf', expiredTimestamp)\n\n  if (redis.call('zcard', key) + permits) <= limit then\n    for i=0, permits - 1 do\n      table.insert(args, now)\n      table.insert(args, identifier .. '_' .. i)\n    end\n    redis.call('zadd', key, unpack(args))\n    redis.call('pexpire', key, lockTimeout)\n    return 1\n  else\n    return 0\n  end";

#[cfg(test)]
mod tests {
    use super::*;

    /// SHA1 of redis-semaphore 5.8.0's scripts, as its EVALSHA sends them
    /// (the acquires: theirs, which ours are checked against).
    #[test]
    fn the_scripts_hash_as_redis_semaphore_5_8_0s() {
        let s = &*SCRIPTS;
        let their_acquire = Lua::new(THEIR_SEMAPHORE_ACQUIRE);
        let their_multi_acquire = Lua::new(THEIR_MULTI_ACQUIRE);
        let hashes = [
            (&s.mutex_refresh, "594683e49a64ebaf975caf5f8079a1d097c438f1"),
            (&s.mutex_release, "7157921a7cc7cfba979acf6d63f073151df17d12"),
            (&their_acquire, "43ebdb49120d170e08af560cb4e46e36f8585936"),
            (&s.refresh, "999a49a1d07671a8027165641001f5bad44608b3"),
            (
                &their_multi_acquire,
                "10c1c2e05e7c48aa5824d227b8c51abcde87b18e",
            ),
            (&s.multi_refresh, "2327bcdc5edb5b8687f6d19b5e1f42b815ebddab"),
            (&s.multi_release, "0bd1010c98f1ddd70a6024fd374489a8ea3d2c12"),
        ];
        for (script, hash) in hashes {
            assert_eq!(script.hash(), hash);
        }
    }

    #[test]
    fn kinds_from_numbers() {
        assert_eq!(Kind::new(0, 0).unwrap(), Kind::Mutex);
        assert_eq!(Kind::new(3, 0).unwrap(), Kind::Semaphore { limit: 3 });
        assert_eq!(
            Kind::new(3, 2).unwrap(),
            Kind::Multi {
                limit: 3,
                permits: 2
            }
        );
        assert!(Kind::new(0, 2).is_err());
    }
}
