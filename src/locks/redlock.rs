//! node-redlock's lock: several resources taken all-or-nothing on each of
//! N independent servers by one script per server, held while a majority
//! holds them. By default the scripts are redlock 4.2.0's own (or
//! node-redlock 5.0.0-beta.2's, for that face), byte for byte, so their EVALSHA hashes are a redlock process's and the two
//! exclude each other on the same keys; a face may hand in transformed
//! ones (`lockScript: (s) => …`). A server votes for an operation when its
//! script answers the number of keys (redlock's rule).
//!
//! The quorum rounds are locks/quorum.rs's (every server at once, each
//! bounded by the server timeout); the retries are the one wait loop's.
//! Validity is counted on the monotonic clock from the start of the
//! attempt that won, less redlock's drift (`round(driftFactor × ttl) + 2`
//! ms), and a lock with none left is never granted. A failed attempt gives
//! back what it took, everywhere, before the next.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::limits::{check_not_empty, invalid_timeout, is_positive_ms};
use crate::locks::fanout::{drift_ms, majority, on_all, validity_ms, Outcome, Report, Settle};
use crate::locks::renewal::{Lost, Renewal};
use crate::locks::token;
use crate::transport::connection::SharedConnection;
use crate::transport::dialect::{Dialect, Dialects, Speaks};
use crate::transport::lua::Lua;
use crate::waiting::cancel::Cancel;
use crate::waiting::retry::{retry, Attempt, Retries, Schedule};
use crate::waiting::timer::{Timer, TokioTimer};
use crate::waiting::wakeups::Wakeups;

/// redlock 4.2.0's lock script: 0 if any key exists, else sets them all
/// (`PX ttl`) and answers how many.
pub const LOCK_SCRIPT: &str = "\n\t-- Return 0 if an entry already exists.\n\tfor i, key in ipairs(KEYS) do\n\t\tif redis.call(\"exists\", key) == 1 then\n\t\t\treturn 0\n\t\tend\n\tend\n\n\t-- Create an entry for each provided key.\n\tfor i, key in ipairs(KEYS) do\n\t\tredis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n\tend\n\n\t-- Return the number of entries added.\n\treturn #KEYS\n";

/// redlock 4.2.0's unlock script: deletes each key that carries the value
/// and answers how many.
pub const UNLOCK_SCRIPT: &str = "\n\tlocal count = 0\n\tfor i, key in ipairs(KEYS) do\n\t\t-- Only remove entries for *this* lock value.\n\t\tif redis.call(\"get\", key) == ARGV[1] then\n\t\t\tredis.pcall(\"del\", key)\n\t\t\tcount = count + 1\n\t\tend\n\tend\n\n\t-- Return the number of entries removed.\n\treturn count\n";

/// redlock 4.2.0's extend script: 0 if any key carries another value,
/// else sets them all again (`PX ttl`) and answers how many.
pub const EXTEND_SCRIPT: &str = "\n\t-- Return 0 if an entry exists with a *different* lock value.\n\tfor i, key in ipairs(KEYS) do\n\t\tif redis.call(\"get\", key) ~= ARGV[1] then\n\t\t\treturn 0\n\t\tend\n\tend\n\n\t-- Update the entry for each provided key.\n\tfor i, key in ipairs(KEYS) do\n\t\tredis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n\tend\n\n\t-- Return the number of entries updated.\n\treturn #KEYS\n";

/// node-redlock 5's acquire script (the same rule as 4.2.0's lock script), byte for byte.
pub const V5_LOCK_SCRIPT: &str = "\n  -- Return 0 if an entry already exists.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"exists\", key) == 1 then\n      return 0\n    end\n  end\n\n  -- Create an entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n  end\n\n  -- Return the number of entries added.\n  return #KEYS\n";

/// node-redlock 5's release script, byte for byte.
pub const V5_UNLOCK_SCRIPT: &str = "\n  local count = 0\n  for i, key in ipairs(KEYS) do\n    -- Only remove entries for *this* lock value.\n    if redis.call(\"get\", key) == ARGV[1] then\n      redis.pcall(\"del\", key)\n      count = count + 1\n    end\n  end\n\n  -- Return the number of entries removed.\n  return count\n";

/// node-redlock 5's extend script, byte for byte.
pub const V5_EXTEND_SCRIPT: &str = "\n  -- Return 0 if an entry exists with a *different* lock value.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"get\", key) ~= ARGV[1] then\n      return 0\n    end\n  end\n\n  -- Update the entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n  end\n\n  -- Return the number of entries updated.\n  return #KEYS\n";

/// `wakeOnRelease` (ours, not redlock's): the unlock rule above (delete
/// each key that carries the value ARGV[1], answer how many) that also
/// announces each delete with command ARGV[2] (`PUBLISH`, or `SPUBLISH` on
/// a Redis Cluster 7+) on that key's release channel ARGV[2 + i], in the
/// same round trip. Only a face's own unlock script may be replaced by it
/// (a transformed one is refused with this setting).
pub const ANNOUNCED_UNLOCK: &str = "local count = 0\nfor i, key in ipairs(KEYS) do\n  if redis.call('get', key) == ARGV[1] then\n    redis.pcall('del', key)\n    redis.call(ARGV[2], ARGV[2 + i], '1')\n    count = count + 1\n  end\nend\nreturn count";

static ANNOUNCED_UNLOCK_SCRIPT: std::sync::LazyLock<Lua> =
    std::sync::LazyLock::new(|| Lua::new(ANNOUNCED_UNLOCK));

/// The three scripts a redlock lock runs.
pub struct Scripts {
    pub lock: Lua,
    pub unlock: Lua,
    pub extend: Lua,
    /// They are redlock 4.2.0's or node-redlock 5's own, untransformed:
    /// on one resource each is `SET … NX PX`, `DELIFEQ` or `SET … IFEQ …
    /// PX` in effect, so a server that has those runs them instead. A set
    /// a user transformed always runs as given.
    own: bool,
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Scripts({}, {}, {})",
            self.lock.hash(),
            self.unlock.hash(),
            self.extend.hash()
        )
    }
}

impl Scripts {
    pub fn new(lock: &str, unlock: &str, extend: &str) -> Scripts {
        let own = [
            [LOCK_SCRIPT, UNLOCK_SCRIPT, EXTEND_SCRIPT],
            [V5_LOCK_SCRIPT, V5_UNLOCK_SCRIPT, V5_EXTEND_SCRIPT],
        ]
        .contains(&[lock, unlock, extend]);
        Scripts {
            lock: Lua::new(lock),
            unlock: Lua::new(unlock),
            extend: Lua::new(extend),
            own,
        }
    }

    /// Whether they are redlock 4.2.0's or node-redlock 5's own (see
    /// the field).
    pub fn own(&self) -> bool {
        self.own
    }

    /// redlock 4.2.0's own.
    pub fn redlock() -> Scripts {
        Scripts::new(LOCK_SCRIPT, UNLOCK_SCRIPT, EXTEND_SCRIPT)
    }

    /// node-redlock 5.0.0-beta.2's own.
    pub fn redlock5() -> Scripts {
        Scripts::new(V5_LOCK_SCRIPT, V5_UNLOCK_SCRIPT, V5_EXTEND_SCRIPT)
    }
}

/// The resources of one lock and its random value.
#[derive(Clone, Copy)]
pub struct Resources<'a> {
    pub keys: &'a [String],
    pub value: &'a str,
}

/// How an acquire or extend retries, and each server's bound.
#[derive(Clone, Copy, Debug)]
pub struct RedlockOptions {
    pub ttl_ms: u64,
    pub retries: Retries,
    pub delay: Duration,
    /// Up to this much random extra wait per pause.
    pub jitter: Duration,
    pub server_timeout: Duration,
    /// redlock's `driftFactor` (0.01 by default).
    pub drift_factor: f64,
    /// redlock 4.2.0: a failed lock attempt is given back on every server,
    /// even where every server refused it (its unlock after each attempt;
    /// on a key holding another type of value, that unlock is what fails
    /// and tells). Otherwise only an attempt that may have taken something
    /// gives it back.
    pub give_back_always: bool,
}

/// One server's step of a redlock operation: `take` by `script` (with the
/// resources as KEYS and `value`, then `tail` — the TTL, or the publish
/// command and the release channels — as ARGV), `true` when it answers the
/// number of keys. With `dialect` (the set's own scripts, one resource),
/// on a server that has the compare commands, the same step without Lua:
/// `SET key value NX PX ttl`, `SET key value IFEQ value PX ttl`, or
/// `DELIFEQ key value` (announced: with its publish pipelined after it).
async fn run<C: ConnectionLike>(
    conn: &mut C,
    dialect: Option<&Dialect>,
    take: Take,
    script: &Lua,
    res: Resources<'_>,
    tail: &[&str],
    ttl_ms: u64,
) -> Result<bool> {
    if let (Some(dialect), [key]) = (dialect, res.keys) {
        if let Some(done) = run_lua_free(conn, dialect, take, key, res.value, tail, ttl_ms).await? {
            return Ok(done);
        }
    }
    let bytes = res.keys.iter().map(String::len).sum::<usize>()
        + tail.iter().map(|t| t.len()).sum::<usize>()
        + res.value.len()
        + 16;
    let reply: redis::Value = script
        .eval(conn, (2 + res.keys.len() + tail.len(), bytes), |cmd| {
            cmd.arg(res.keys.len())
                .arg(res.keys)
                .arg(res.value)
                .arg(tail);
        })
        .await?;
    let n = res.keys.len();
    Ok(match reply {
        redis::Value::Int(got) => usize::try_from(got).is_ok_and(|g| g == n),
        redis::Value::BulkString(b) => b == n.to_string().as_bytes(),
        redis::Value::SimpleString(s) => s == n.to_string(),
        _ => false,
    })
}

/// [`run`]'s step on one resource without Lua, where the server can:
/// `SET key value NX PX ttl`, `SET key value IFEQ value PX ttl`, or
/// `DELIFEQ key value` (with `tail` = the publish command and the channel,
/// its announcement pipelined after it). `None`: the server has not the
/// commands, the script runs.
#[allow(clippy::too_many_arguments)]
async fn run_lua_free<C: ConnectionLike>(
    conn: &mut C,
    dialect: &Dialect,
    take: Take,
    key: &str,
    value: &str,
    tail: &[&str],
    ttl_ms: u64,
) -> Result<Option<bool>> {
    let (ms, announce) = match (take, tail) {
        (Take::Lock, _) => {
            if dialect.of(conn).await? != Speaks::CompareCommands {
                return Ok(None);
            }
            return Ok(Some(token::try_acquire(conn, key, value, ttl_ms).await?));
        }
        (Take::Extend | Take::Renew, _) => (Some(ttl_ms), None),
        (Take::Unlock, [publish, channel]) => (None, Some((*channel, *publish))),
        (Take::Unlock, _) => (None, None),
    };
    let n = token::compare_without_lua(conn, dialect, key, value, ms, announce).await?;
    Ok(n.map(|n| n == 1))
}

/// Which script an attempt runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Take {
    Lock,
    Extend,
    /// node-redlock 5 retries a release too.
    Unlock,
    /// The keeper's renewal: the extend script, nothing given back.
    Renew,
}

/// One attempt on every server (see [`attempt`]): won when granted.
struct Round<'a, 'd, F, C> {
    n: usize,
    connect: &'a F,
    /// Each server's dialect: the set's own scripts on one resource go
    /// without Lua where a server can.
    dialect: Dialects<'a, 'd>,
    timer: &'a dyn Timer,
    scripts: &'a Scripts,
    res: Resources<'a>,
    opts: &'a RedlockOptions,
    take: Take,
    /// A release's announcement (`wakeOnRelease`), per server: the publish
    /// command, then each key's channel.
    announce: Option<&'a [Vec<&'a str>]>,
    /// Each attempt's outcomes so far.
    rounds: Vec<Vec<Outcome>>,
    /// Every server's failure so far, in order: each attempt's, then its
    /// give-back's.
    failures: Vec<(usize, Outcome)>,
    /// How long a lock attempt waits for the servers (every other step
    /// waits for all).
    settle: Settle<'a, C>,
}

impl<C, F, Fut> Attempt for Round<'_, '_, F, C>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    type Won = Report;
    type Lost = Report;

    async fn attempt(&mut self) -> Result<std::result::Result<Report, Report>> {
        let (report, given_back) = attempt(self).await;
        self.rounds.push(report.outcomes.clone());
        for outcomes in [&report.outcomes, &given_back] {
            let failed = outcomes.iter().enumerate().filter(|(_, o)| o.failed());
            self.failures.extend(failed.map(|(i, o)| (i, o.clone())));
        }
        Ok(if report.granted {
            Ok(report)
        } else {
            Err(report)
        })
    }
}

/// The lock (or extend) script on every server at once; granted on a
/// majority with validity left, else what it took is given back
/// everywhere (with what each server said to that, if it was given back).
async fn attempt<C, F, Fut>(r: &Round<'_, '_, F, C>) -> (Report, Vec<Outcome>)
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let (script, took, refused) = match (r.take, r.announce) {
        (Take::Lock, _) => (&r.scripts.lock, Outcome::Acquired, Outcome::Held),
        (Take::Extend | Take::Renew, _) => (&r.scripts.extend, Outcome::Done, Outcome::NotOurs),
        (Take::Unlock, None) => (&r.scripts.unlock, Outcome::Done, Outcome::NotOurs),
        (Take::Unlock, Some(_)) => (&*ANNOUNCED_UNLOCK_SCRIPT, Outcome::Done, Outcome::NotOurs),
    };
    let (res, ttl) = (r.res, r.opts.ttl_ms);
    let ttl_text = ttl.to_string();
    let ttl_arg = [ttl_text.as_str()];
    let (take, announce) = (r.take, r.announce);
    let tail = |i: usize| -> &[&str] {
        match (take, announce) {
            (Take::Unlock, None) => &[],
            (Take::Unlock, Some(per)) => per.get(i).map_or(&[], Vec::as_slice),
            _ => &ttl_arg,
        }
    };
    // A lock attempt may settle on its majority, leaving unheard only the
    // servers whose EVALSHA the caller knows is final (`r.settle`): one
    // answered NOSCRIPT with nobody left to send the EVAL would never load
    // the script, nor take the lock there (benchmark/NOTES.md §30).
    let settle = match r.take {
        Take::Lock => r.settle,
        Take::Extend | Take::Renew | Take::Unlock => Settle::AllServers,
    };
    let started = Instant::now();
    let (dialect, own) = (r.dialect, r.scripts.own);
    let step = |i: usize| own.then(|| dialect(i));
    let outcomes = on_all(
        r.n,
        r.connect,
        r.timer,
        r.opts.server_timeout,
        settle,
        |i, mut c: C| async move { run(&mut c, step(i), take, script, res, tail(i), ttl).await },
    )
    .await
    .into_iter()
    .map(|o| match o {
        Outcome::Done => took.clone(),
        Outcome::NotOurs => refused.clone(),
        other => other,
    })
    .collect::<Vec<_>>();
    let got = outcomes.iter().filter(|o| o.ok()).count();
    if let Take::Unlock = r.take {
        // A release has no validity; it is done where a majority deleted.
        let report = Report {
            granted: got >= majority(r.n),
            validity_ms: 0,
            outcomes,
            attempts: 1,
            started,
            rounds: Vec::new(),
            failures: Vec::new(),
        };
        return (report, Vec::new());
    }
    let validity = validity_ms(ttl, started.elapsed(), r.opts.drift_factor);
    let granted = got >= majority(r.n) && validity > 0;
    // Give back what this attempt may have taken (a timed-out script may
    // have run too), everywhere at once.
    let gives_back = !matches!(r.take, Take::Renew);
    let may_hold = r.opts.give_back_always || outcomes.iter().any(|o| *o != refused);
    let given_back = match !granted && gives_back && may_hold {
        true => {
            unlock_all(
                r.n,
                r.connect,
                r.dialect,
                r.timer,
                r.opts.server_timeout,
                r.scripts,
                res,
            )
            .await
        }
        false => Vec::new(),
    };
    let report = Report {
        granted,
        validity_ms: validity,
        outcomes,
        attempts: 1,
        started,
        rounds: Vec::new(),
        failures: Vec::new(),
    };
    (report, given_back)
}

/// Takes every resource on a majority of the `n` servers (`connect(i)`
/// gives server `i`'s connection) with the lock script, retrying as
/// `opts` says; `random` gives a number in 0..1 for the jitter, `wake`
/// (`wakeOnRelease`) each server's wake-up source and the resources'
/// release channels, and `cancel` ends the wait. With `settle`
/// [`Settle::Majority`] an attempt is granted as soon as a majority took
/// the resources, without the servers it says are final once sent.
#[allow(clippy::too_many_arguments)]
pub async fn acquire<C, F, Fut>(
    n: usize,
    connect: F,
    dialect: Dialects<'_, '_>,
    timer: &dyn Timer,
    scripts: &Scripts,
    res: Resources<'_>,
    opts: &RedlockOptions,
    random: &(dyn Fn() -> f64 + Sync),
    wake: Option<(&[Arc<Wakeups>], &[&str])>,
    cancel: Option<&Cancel>,
    settle: Settle<'_, C>,
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    rounds(
        n,
        &connect,
        dialect,
        timer,
        scripts,
        res,
        opts,
        random,
        Waiting { wake, cancel },
        Take::Lock,
        None,
        settle,
    )
    .await
}

/// One renewal of a kept lock: the extend script on every server at once,
/// nothing given back when it falls short (the keeper tries again while
/// the lease may still run). Counts as renewed on a majority with validity
/// left.
pub async fn renew<C, F, Fut>(
    n: usize,
    connect: F,
    dialect: Dialects<'_, '_>,
    timer: &dyn Timer,
    scripts: &Scripts,
    res: Resources<'_>,
    opts: &RedlockOptions,
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    check(n, res, opts.ttl_ms)?;
    let round = Round {
        n,
        connect: &connect,
        dialect,
        timer,
        scripts,
        res,
        opts,
        take: Take::Renew,
        announce: None,
        rounds: Vec::new(),
        failures: Vec::new(),
        settle: Settle::AllServers,
    };
    // A renewal gives nothing back.
    Ok(attempt(&round).await.0)
}

/// A node-redlock lock kept by the lease keeper: its resources `keys`
/// holding `value` on the independent `servers`, each answering within
/// `within`, renewed by the lock's own extend script; lost when a majority
/// refuses (taken when a majority has one of the keys carrying another
/// value).
pub struct Kept {
    pub servers: Vec<Arc<SharedConnection>>,
    pub within: Duration,
    pub scripts: Arc<Scripts>,
    pub keys: Vec<String>,
    pub value: String,
    pub drift_factor: f64,
}

impl Renewal for Kept {
    fn renew(&self, lease_ms: u64) -> BoxFuture<'_, Result<Option<Lost>>> {
        Box::pin(async move {
            let connect = |i: usize| self.servers[i].get();
            let n = self.servers.len();
            let res = Resources {
                keys: &self.keys,
                value: &self.value,
            };
            let opts = RedlockOptions {
                ttl_ms: lease_ms,
                retries: Retries::Count(0),
                delay: Duration::ZERO,
                jitter: Duration::ZERO,
                server_timeout: self.within,
                drift_factor: self.drift_factor,
                give_back_always: false,
            };
            let dialect = &|i: usize| self.servers[i].dialect();
            let report = renew(n, connect, dialect, &TokioTimer, &self.scripts, res, &opts).await?;
            let refused = report
                .outcomes
                .iter()
                .filter(|o| matches!(o, Outcome::NotOurs))
                .count();
            if report.granted {
                Ok(None)
            } else if refused > n - majority(n) {
                let connect = |i: usize| self.servers[i].get();
                let taken = taken(n, connect, &TokioTimer, self.within, &self.keys).await;
                Ok(Some(if taken { Lost::Taken } else { Lost::Expired }))
            } else {
                Err(Error::Timeout(
                    "renewal not confirmed by a majority in time".into(),
                ))
            }
        })
    }

    fn margin_ms(&self, lease_ms: u64) -> u64 {
        drift_ms(lease_ms, self.drift_factor).max(0) as u64
    }
}

/// After a renewal a majority refused: whether the resources now belong
/// to someone else (a majority of the servers has one of the keys, which
/// no longer carries the lock's value) rather than having expired or been
/// deleted.
pub async fn taken<C, F, Fut>(
    n: usize,
    connect: F,
    timer: &dyn Timer,
    within: Duration,
    keys: &[String],
) -> bool
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let outcomes = on_all(
        n,
        &connect,
        timer,
        within,
        Settle::AllServers,
        |_, mut c: C| async move {
            let found: i64 = redis::cmd("EXISTS").arg(keys).query_async(&mut c).await?;
            Ok(found > 0)
        },
    )
    .await;
    outcomes.iter().filter(|o| o.ok()).count() >= majority(n)
}

/// Sets every resource's TTL again on a majority with the extend script
/// (while they carry the value), retrying as `opts` says, as redlock 4
/// extends.
#[allow(clippy::too_many_arguments)]
pub async fn extend<C, F, Fut>(
    n: usize,
    connect: F,
    dialect: Dialects<'_, '_>,
    timer: &dyn Timer,
    scripts: &Scripts,
    res: Resources<'_>,
    opts: &RedlockOptions,
    random: &(dyn Fn() -> f64 + Sync),
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    rounds(
        n,
        &connect,
        dialect,
        timer,
        scripts,
        res,
        opts,
        random,
        Waiting::default(),
        Take::Extend,
        None,
        Settle::AllServers,
    )
    .await
}

/// How an operation's pauses may end early (an acquire's), and a release's
/// channels to announce on.
#[derive(Clone, Copy, Default)]
struct Waiting<'a> {
    wake: Option<(&'a [Arc<Wakeups>], &'a [&'a str])>,
    cancel: Option<&'a Cancel>,
}

#[allow(clippy::too_many_arguments)]
async fn rounds<C, F, Fut>(
    n: usize,
    connect: &F,
    dialect: Dialects<'_, '_>,
    timer: &dyn Timer,
    scripts: &Scripts,
    res: Resources<'_>,
    opts: &RedlockOptions,
    random: &(dyn Fn() -> f64 + Sync),
    waiting: Waiting<'_>,
    take: Take,
    announce: Option<&[Vec<&str>]>,
    settle: Settle<'_, C>,
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    check(n, res, opts.ttl_ms)?;
    let schedule = Schedule {
        retries: opts.retries,
        delay: opts.delay,
        jitter: opts.jitter,
    };
    let mut round = Round {
        n,
        connect,
        dialect,
        timer,
        scripts,
        res,
        opts,
        take,
        announce,
        rounds: Vec::new(),
        failures: Vec::new(),
        settle,
    };
    let waited = retry(
        &mut round,
        timer,
        &schedule,
        random,
        waiting.wake,
        waiting.cancel,
    )
    .await?;
    let (Ok(mut report) | Err(mut report)) = waited.outcome;
    report.attempts = waited.attempts;
    report.rounds = round.rounds;
    report.failures = round.failures;
    Ok(report)
}

/// Deletes every resource that carries the value, on every server with the
/// unlock script; granted when a majority deleted them all (the others
/// expire by their TTL). Tried again as `opts` says until then (node-redlock
/// 5 retries a release; redlock 4 does not: no retries); `opts.ttl_ms` is
/// not used. With `announce` (`wakeOnRelease`: per server, the publish
/// command and each key's release channel) each delete is announced, by
/// [`ANNOUNCED_UNLOCK`] instead of the set's unlock script.
#[allow(clippy::too_many_arguments)]
pub async fn release<C, F, Fut>(
    n: usize,
    connect: F,
    dialect: Dialects<'_, '_>,
    timer: &dyn Timer,
    scripts: &Scripts,
    res: Resources<'_>,
    opts: &RedlockOptions,
    random: &(dyn Fn() -> f64 + Sync),
    announce: Option<&[Vec<&str>]>,
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    rounds(
        n,
        &connect,
        dialect,
        timer,
        scripts,
        res,
        opts,
        random,
        Waiting::default(),
        Take::Unlock,
        announce,
        Settle::AllServers,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn unlock_all<C, F, Fut>(
    n: usize,
    connect: &F,
    dialect: Dialects<'_, '_>,
    timer: &dyn Timer,
    server_timeout: Duration,
    scripts: &Scripts,
    res: Resources<'_>,
) -> Vec<Outcome>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    on_all(
        n,
        connect,
        timer,
        server_timeout,
        Settle::AllServers,
        |i, mut c: C| async move {
            let d = scripts.own.then(|| dialect(i));
            run(&mut c, d, Take::Unlock, &scripts.unlock, res, &[], 0).await
        },
    )
    .await
}

fn check(n: usize, res: Resources<'_>, ttl_ms: u64) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidArgument(
            "a redlock needs at least one server".into(),
        ));
    }
    if res.keys.is_empty() {
        return Err(Error::InvalidArgument(
            "a redlock needs at least one resource".into(),
        ));
    }
    for key in res.keys {
        check_not_empty("resource", key)?;
    }
    match is_positive_ms(ttl_ms) {
        true => Ok(()),
        false => Err(invalid_timeout(ttl_ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SHA1 of redlock 4.2.0's scripts, as its EVALSHA sends them.
    #[test]
    fn the_scripts_hash_as_redlock_4_2_0s() {
        let s = Scripts::redlock();
        assert_eq!(s.lock.hash(), "e5a322e2634ef59a516e8ea150cb085afafee684");
        assert_eq!(s.unlock.hash(), "0f0f23b9048b36752b5be114f357ba083449f908");
        assert_eq!(s.extend.hash(), "ce46f80993d5dac20dd066eb301a4e37994bdbed");
        let v5 = Scripts::redlock5();
        assert_eq!(v5.lock.hash(), "96da70f7716f27d278a5218544df37fd8b0a5e4c");
        assert_eq!(v5.unlock.hash(), "e4612211c9f8f51c257e26e056b0a654b3187242");
        assert_eq!(v5.extend.hash(), "aed6f382e410db8ba7926d4e5e9aab410bf2a78a");
    }
}
