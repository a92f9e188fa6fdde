//! Redlock: one lock on N independent Redis servers, held while a majority
//! holds it.
//!
//! Every operation goes to all servers at once, each bounded by the server
//! timeout. An acquire settles as soon as a majority has granted it: what
//! the others answer later cannot change the result, so the slowest server
//! does not hold the caller up (node-redlock 5 settles the same way); the
//! others' outcomes are then [`Outcome::Unheard`]. Every other step waits
//! for all servers (or their timeouts). An acquire is
//! granted only when a majority took the key **and** the validity left —
//! TTL − elapsed − drift, with drift = TTL / 100 + 2 ms, on a monotonic
//! clock, counted from the start of the attempt that won — is positive. A
//! failed attempt releases what it took, on every server at once, before
//! the next attempt (after `delay` plus a random jitter). Extend follows
//! the same rule with the new TTL; a failed extend releases everywhere (the
//! lock is lost). Release asks every server and reports how many confirmed.
//!
//! Expected outcomes are data: each server's [`Outcome`] comes back, and the
//! caller words the errors. Validity is signed (`i64` ms): it can be
//! negative, and is never computed in unsigned arithmetic.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use redis::aio::ConnectionLike;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::limits::{check_not_empty, invalid_timeout, is_positive_ms};
use crate::locks::fanout::{
    drift_ms, final_once_sent, majority, on_all, validity_ms, Outcome, Report, Settle, Step,
};
use crate::locks::renewal::{Lost, Renewal};
use crate::locks::token;
use crate::transport::connection::SharedConnection;
use crate::transport::dialect::Dialects;
use crate::waiting::cancel::Cancel;
use crate::waiting::retry::{retry, Attempt, Retries, Schedule};
use crate::waiting::timer::{Timer, TokioTimer};
use crate::waiting::wakeups::{Source, Wakeups};

/// Redlock's drift factor: 1% of the lease (see [`drift_ms`]).
pub const DRIFT_FACTOR: f64 = 0.01;

/// The settings of a quorum lock.
#[derive(Clone, Copy, Debug)]
pub struct QuorumOptions {
    pub ttl_ms: u64,
    pub retries: Retries,
    pub delay: Duration,
    /// Bound on each server's answer in each step.
    pub server_timeout: Duration,
    /// Up to this much random extra wait between attempts.
    pub jitter: Duration,
}

/// Takes `key` for `token` on a majority of the `n` servers, retrying as
/// `opts` says (with `wake` and `cancel` as `retry::retry` takes them:
/// each server's wake-up source and the release channel, and the wait's
/// cancel switch). `random` gives a number in 0..1 for the jitter.
#[allow(clippy::too_many_arguments)]
pub async fn acquire<'d, C, F, Fut>(
    n: usize,
    connect: F,
    dialect: Dialects<'_, 'd>,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    opts: &QuorumOptions,
    random: &(dyn Fn() -> f64 + Sync),
    wake: Option<(&[Arc<Wakeups>], &[&str])>,
    cancel: Option<&Cancel>,
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    check(n, key, opts.ttl_ms)?;
    let schedule = Schedule {
        retries: opts.retries,
        delay: opts.delay,
        jitter: opts.jitter,
    };
    let mut majority = Majority {
        on: Servers {
            n,
            connect: &connect,
            dialect,
            timer,
            server_timeout: opts.server_timeout,
        },
        key,
        token,
        opts,
    };
    let waited = retry(&mut majority, timer, &schedule, random, wake, cancel).await?;
    let (Ok(mut report) | Err(mut report)) = waited.outcome;
    report.attempts = waited.attempts;
    Ok(report)
}

/// An attempt on a majority (see [`attempt`]): won when granted.
struct Majority<'a, 'd, F> {
    on: Servers<'a, 'd, F>,
    key: &'a str,
    token: &'a str,
    opts: &'a QuorumOptions,
}

impl<C, F, Fut> Attempt for Majority<'_, '_, F>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    type Won = Report;
    type Lost = Report;

    async fn attempt(&mut self) -> Result<std::result::Result<Report, Report>> {
        let report = attempt(&self.on, self.key, self.token, self.opts).await;
        Ok(if report.granted {
            Ok(report)
        } else {
            Err(report)
        })
    }
}

/// One attempt: `SET NX` on every server at once; granted on a majority
/// with validity left, else what it took is given back everywhere.
async fn attempt<C, F, Fut>(
    on: &Servers<'_, '_, F>,
    key: &str,
    token: &str,
    opts: &QuorumOptions,
) -> Report
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let (n, started) = (on.n, Instant::now());
    let outcomes = on_all(
        n,
        on.connect,
        on.timer,
        on.server_timeout,
        Settle::Majority(&final_once_sent),
        |_, mut c: C| async move { token::try_acquire(&mut c, key, token, opts.ttl_ms).await },
    )
    .await
    .into_iter()
    .map(|o| match o {
        Outcome::Done => Outcome::Acquired,
        Outcome::NotOurs => Outcome::Held,
        other => other,
    })
    .collect::<Vec<_>>();
    let validity = validity_ms(opts.ttl_ms, started.elapsed(), DRIFT_FACTOR);
    let got = outcomes.iter().filter(|o| o.ok()).count();
    let granted = got >= majority(n) && validity > 0;
    // Give back what this attempt may have taken (a timed-out SET may
    // have landed too), everywhere at once.
    if !granted && outcomes.iter().any(|o| !matches!(o, Outcome::Held)) {
        release_all(on, key, token, None).await;
    }
    Report {
        granted,
        validity_ms: validity,
        outcomes,
        attempts: 1,
        started,
        rounds: Vec::new(),
        failures: Vec::new(),
    }
}

/// Sets `key`'s TTL to `ms` on a majority for `token`; if that fails (or
/// the new validity is not positive) the lock is lost and released
/// everywhere.
#[allow(clippy::too_many_arguments)]
pub async fn extend<'d, C, F, Fut>(
    n: usize,
    connect: F,
    dialect: Dialects<'_, 'd>,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    ms: u64,
    server_timeout: Duration,
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let on = Servers {
        n,
        connect: &connect,
        dialect,
        timer,
        server_timeout,
    };
    let report = extend_on_all(&on, key, token, ms).await?;
    if !report.granted {
        release_all(&on, key, token, None).await;
    }
    Ok(report)
}

/// A Redlock lock kept by the lease keeper: `key` holding `token` on the
/// independent `servers`, each answering a renewal within `within`; kept
/// while a majority confirms within the new validity (the lease less
/// Redlock's drift), lost when a majority can no longer confirm it.
pub struct Kept {
    pub servers: Vec<Arc<SharedConnection>>,
    pub within: Duration,
    pub key: String,
    pub token: String,
}

impl Renewal for Kept {
    /// The extend script on every server, nothing given back when it falls
    /// short: renewed on a majority with validity left; lost when too many
    /// servers no longer have it for a majority to; else not known yet
    /// (servers slow or away, or no validity left), the tally saying why.
    fn renew(&self, lease_ms: u64) -> BoxFuture<'_, Result<Option<Lost>>> {
        Box::pin(async move {
            let n = self.servers.len();
            let on = Servers {
                n,
                connect: &|i: usize| self.servers[i].get(),
                dialect: &|i: usize| self.servers[i].dialect(),
                timer: &TokioTimer,
                server_timeout: self.within,
            };
            let report = extend_on_all(&on, &self.key, &self.token, lease_ms).await?;
            let not_ours = report
                .outcomes
                .iter()
                .filter(|o| matches!(o, Outcome::NotOurs))
                .count();
            if report.granted {
                return Ok(None);
            }
            if not_ours > n - majority(n) {
                return Ok(Some(Lost::Expired));
            }
            let names: Vec<_> = report
                .outcomes
                .iter()
                .map(|o| o.name(Step::Extend))
                .collect();
            Err(Error::Timeout(format!(
                "renewal not confirmed by a majority in time ({})",
                names.join(", ")
            )))
        })
    }

    fn margin_ms(&self, lease_ms: u64) -> u64 {
        drift_ms(lease_ms, DRIFT_FACTOR).max(0) as u64
    }
}

/// The servers of one quorum operation: how to reach each, what each
/// speaks, the clock and each server's bound.
struct Servers<'a, 'd, F> {
    n: usize,
    connect: &'a F,
    dialect: Dialects<'a, 'd>,
    timer: &'a dyn Timer,
    server_timeout: Duration,
}

async fn extend_on_all<C, F, Fut>(
    on: &Servers<'_, '_, F>,
    key: &str,
    token: &str,
    ms: u64,
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let n = on.n;
    check(n, key, ms)?;
    let started = Instant::now();
    let dialect = on.dialect;
    let outcomes = on_all(
        n,
        on.connect,
        on.timer,
        on.server_timeout,
        Settle::AllServers,
        |i, mut c: C| async move { token::extend(&mut c, dialect(i), key, token, ms).await },
    )
    .await;
    let validity = validity_ms(ms, started.elapsed(), DRIFT_FACTOR);
    let got = outcomes.iter().filter(|o| o.ok()).count();
    Ok(Report {
        granted: got >= majority(n) && validity > 0,
        validity_ms: validity,
        outcomes,
        attempts: 1,
        started,
        rounds: Vec::new(),
        failures: Vec::new(),
    })
}

/// Deletes `key` wherever it carries `token`, announcing each delete on
/// channel `announce` if given (`wakeOnRelease`). Granted when a majority
/// confirmed the delete (the others expire by TTL).
#[allow(clippy::too_many_arguments)]
pub async fn release<'d, C, F, Fut>(
    n: usize,
    connect: F,
    dialect: Dialects<'_, 'd>,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    server_timeout: Duration,
    announce: Option<&str>,
) -> Result<Report>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    check(n, key, 1)?;
    let started = Instant::now();
    let on = Servers {
        n,
        connect: &connect,
        dialect,
        timer,
        server_timeout,
    };
    let outcomes = release_all(&on, key, token, announce).await;
    let got = outcomes.iter().filter(|o| o.ok()).count();
    Ok(Report {
        granted: got >= majority(n),
        validity_ms: 0,
        outcomes,
        attempts: 1,
        started,
        rounds: Vec::new(),
        failures: Vec::new(),
    })
}

async fn release_all<C, F, Fut>(
    on: &Servers<'_, '_, F>,
    key: &str,
    token: &str,
    announce: Option<&str>,
) -> Vec<Outcome>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let dialect = on.dialect;
    on_all(
        on.n,
        on.connect,
        on.timer,
        on.server_timeout,
        Settle::AllServers,
        |i, mut c: C| async move {
            let d = dialect(i);
            match announce {
                Some(channel) => {
                    token::release_announced(&mut c, d, key, token, channel, Source::PubSub).await
                }
                None => token::release(&mut c, d, key, token).await,
            }
        },
    )
    .await
}

fn check(n: usize, key: &str, ttl_ms: u64) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidArgument(
            "a quorum lock needs at least one server".into(),
        ));
    }
    check_not_empty("key", key)?;
    match is_positive_ms(ttl_ms) {
        true => Ok(()),
        false => Err(invalid_timeout(ttl_ms)),
    }
}
