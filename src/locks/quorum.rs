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
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_util::future::{join_all, poll_fn, select, BoxFuture, Either};
use futures_util::stream::{FuturesUnordered, StreamExt};
use redis::aio::ConnectionLike;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::limits::{check_not_empty, invalid_timeout, is_positive_ms, MAX_MS};
use crate::locks::renewal::{self, Lost};
use crate::locks::token;
use crate::transport::connection::SharedConnection;
use crate::waiting::cancel::Cancel;
use crate::waiting::retry::{retry, Attempt, Retries, Schedule};
use crate::waiting::timer::{Timer, TokioTimer};
use crate::waiting::wakeups::Wakeups;

/// What one server did in one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The acquire's `SET NX` took the key.
    Acquired,
    /// The key is held by another owner.
    Held,
    /// Extended / released: the key carried our token.
    Done,
    /// Extend / release: the key was gone or carried another token.
    NotOurs,
    /// No answer within the server timeout.
    Timeout,
    /// No connection could be made.
    Unreachable(String),
    /// Redis answered with an error.
    Failed(String),
    /// Not answered yet when a majority had already granted the step (its
    /// command was sent; what it answers cannot change the result).
    Unheard,
}

impl Outcome {
    /// The name JavaScript shows in `err.servers[i].outcome` for `step`.
    pub fn name(&self, step: Step) -> &'static str {
        match (self, step) {
            (Outcome::Acquired, _) => "acquired",
            (Outcome::Held, _) => "held",
            (Outcome::Done, Step::Extend) => "extended",
            (Outcome::Done, _) => "released",
            (Outcome::NotOurs, _) => "not-ours",
            (Outcome::Timeout, _) => "timeout",
            (Outcome::Unreachable(_), _) => "unreachable",
            (Outcome::Failed(_), _) => "error",
            (Outcome::Unheard, _) => "unheard",
        }
    }

    /// The underlying error's message, if any.
    pub fn message(&self) -> Option<&str> {
        match self {
            Outcome::Unreachable(m) | Outcome::Failed(m) => Some(m),
            _ => None,
        }
    }

    pub(crate) fn ok(&self) -> bool {
        matches!(self, Outcome::Acquired | Outcome::Done)
    }

    /// The server did not answer (in time, or at all) or answered an error.
    pub fn failed(&self) -> bool {
        matches!(
            self,
            Outcome::Timeout | Outcome::Unreachable(_) | Outcome::Failed(_)
        )
    }

    /// No server said no: done, or not heard from after a majority had granted.
    pub fn not_against(&self) -> bool {
        self.ok() || *self == Outcome::Unheard
    }
}

/// How long a step on every server waits for their answers.
pub enum Settle<'a, C> {
    /// Until every server has answered (or timed out): each outcome known.
    AllServers,
    /// Until a majority has done the step, or every server has answered:
    /// the servers not heard from by then are [`Outcome::Unheard`]. Only a
    /// server whose command is final once sent may be left unheard: the
    /// function says so of server `i` on the connection it got (a plain
    /// `SET` always is; an `EVALSHA` only where the script is known to be
    /// loaded, for a NOSCRIPT answer nobody hears would leave it unloaded
    /// and the step undone there).
    Majority(&'a (dyn Fn(usize, &C) -> bool + Sync)),
}

// By hand: derived, both would ask `C: Clone` of the connection.
impl<C> Clone for Settle<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for Settle<'_, C> {}

/// A plain command (`SET NX PX`): final once sent, on any connection.
fn final_once_sent<C>(_: usize, _: &C) -> bool {
    true
}

/// Which operation a report is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Acquire,
    Extend,
    Release,
}

/// One operation's result: granted or not, the validity left (ms, signed;
/// meaningful when granted), and each server's outcome (of the last
/// attempt, for an acquire).
#[derive(Debug)]
pub struct Report {
    pub granted: bool,
    pub validity_ms: i64,
    pub outcomes: Vec<Outcome>,
    /// Attempts made (an acquire: 1 + the retries used).
    pub attempts: u64,
    /// When the reported attempt started (its validity counts from here).
    pub started: Instant,
    /// Every attempt's outcomes, in order, where the lock kind keeps them
    /// (node-redlock's: its errors list each attempt); else empty.
    pub rounds: Vec<Vec<Outcome>>,
    /// Where the lock kind keeps them (node-redlock's), every server's
    /// failure (timeout, unreachable, error) in order, as (server, what):
    /// each attempt's, then what giving that attempt back met; else empty.
    pub failures: Vec<(usize, Outcome)>,
}

impl Report {
    /// Until when a grant (or extend) of a lease of `ttl_ms` reported here
    /// is valid: the attempt's start plus the lease, less the drift.
    pub fn valid_until(&self, ttl_ms: u64) -> Instant {
        let ms = (ttl_ms.min(MAX_MS) as i64 - drift_ms(ttl_ms)).max(0) as u64;
        self.started + Duration::from_millis(ms)
    }
}

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

/// How many servers are a majority of `n`.
pub fn majority(n: usize) -> usize {
    n / 2 + 1
}

/// The clock drift allowed for a lease of `ttl_ms` (Redlock's rule).
pub fn drift_ms(ttl_ms: u64) -> i64 {
    (ttl_ms / 100) as i64 + 2
}

/// The validity left of a lease of `ttl_ms` granted by an attempt started
/// `elapsed` ago. Signed: negative when the attempt took too long.
pub fn validity_ms(ttl_ms: u64, elapsed: Duration) -> i64 {
    let ttl = ttl_ms.min(MAX_MS) as i64;
    let elapsed = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
    ttl.saturating_sub(elapsed).saturating_sub(drift_ms(ttl_ms))
}

/// Runs `op(i, connection)` on every server `i` (`connect(i)` gives its
/// connection), all at once, each bounded by `within`, for as long as
/// `settle` says. With [`Settle::Majority`] it also waits for every
/// server's connection (a server that cannot be reached is reported, not
/// left unheard) and for the answer of every server whose command is not
/// final once sent, so that what is dropped later only stops listening
/// for a reply that cannot change anything.
pub(crate) async fn on_all<C, F, Fut, Op, OpFut>(
    n: usize,
    connect: &F,
    timer: &dyn Timer,
    within: Duration,
    settle: Settle<'_, C>,
    op: Op,
) -> Vec<Outcome>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
    Op: Fn(usize, C) -> OpFut,
    OpFut: Future<Output = Result<bool>>,
{
    // A majority of one or two servers is all of them: nothing to leave.
    let settle = match majority(n) < n {
        true => settle,
        false => Settle::AllServers,
    };
    // With a majority to settle on: which servers have a final command under
    // way (connected, and final once sent; the command is written in the
    // same poll). Atomic only so that the future is Send; it is read and
    // written from the one task that polls them all.
    let sent: Vec<AtomicBool> = match settle {
        Settle::Majority(_) => (0..n).map(|_| AtomicBool::new(false)).collect(),
        Settle::AllServers => Vec::new(),
    };
    let one = |i: usize| {
        let (op, sent) = (&op, &sent);
        async move {
            let work = std::pin::pin!(async move {
                let conn = match connect(i).await {
                    Ok(c) => c,
                    Err(e) => return Outcome::Unreachable(e.message().to_string()),
                };
                if let Settle::Majority(is_final) = settle {
                    sent[i].store(is_final(i, &conn), Ordering::Relaxed);
                }
                match op(i, conn).await {
                    Ok(true) => Outcome::Done,
                    Ok(false) => Outcome::NotOurs,
                    Err(Error::Timeout(_)) => Outcome::Timeout,
                    Err(Error::Connection(m)) => Outcome::Unreachable(m),
                    Err(e) => Outcome::Failed(e.message().to_string()),
                }
            });
            match select(work, timer.sleep(within)).await {
                Either::Left((outcome, _)) => outcome,
                Either::Right(_) => Outcome::Timeout,
            }
        }
    };
    if let Settle::AllServers = settle {
        return join_all((0..n).map(one)).await;
    }
    let mut pending: FuturesUnordered<_> = (0..n)
        .map(|i| {
            let work = one(i);
            async move { (i, work.await) }
        })
        .collect();
    // Unheard until answered (no server's answer is `Unheard`).
    let mut outcomes = vec![Outcome::Unheard; n];
    let mut done = 0;
    poll_fn(|cx| loop {
        match pending.poll_next_unpin(cx) {
            Poll::Ready(Some((i, outcome))) => {
                done += usize::from(outcome.ok());
                outcomes[i] = outcome;
            }
            Poll::Ready(None) => return Poll::Ready(()),
            Poll::Pending => {
                // Decided: a majority did it, and every other server
                // answered or has its command under way.
                let all_sent = (0..n)
                    .all(|i| outcomes[i] != Outcome::Unheard || sent[i].load(Ordering::Relaxed));
                return match done >= majority(n) && all_sent {
                    true => Poll::Ready(()),
                    false => Poll::Pending,
                };
            }
        }
    })
    .await;
    outcomes
}

/// Takes `key` for `token` on a majority of the `n` servers, retrying as
/// `opts` says (with `wake` and `cancel` as `retry::retry` takes them:
/// each server's wake-up source and the release channel, and the wait's
/// cancel switch). `random` gives a number in 0..1 for the jitter.
#[allow(clippy::too_many_arguments)]
pub async fn acquire<C, F, Fut>(
    n: usize,
    connect: F,
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
        n,
        connect: &connect,
        timer,
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
struct Majority<'a, F> {
    n: usize,
    connect: &'a F,
    timer: &'a dyn Timer,
    key: &'a str,
    token: &'a str,
    opts: &'a QuorumOptions,
}

impl<C, F, Fut> Attempt for Majority<'_, F>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    type Won = Report;
    type Lost = Report;

    async fn attempt(&mut self) -> Result<std::result::Result<Report, Report>> {
        let report = attempt(
            self.n,
            self.connect,
            self.timer,
            self.key,
            self.token,
            self.opts,
        )
        .await;
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
    n: usize,
    connect: &F,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    opts: &QuorumOptions,
) -> Report
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let started = Instant::now();
    let outcomes = on_all(
        n,
        connect,
        timer,
        opts.server_timeout,
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
    let validity = validity_ms(opts.ttl_ms, started.elapsed());
    let got = outcomes.iter().filter(|o| o.ok()).count();
    let granted = got >= majority(n) && validity > 0;
    // Give back what this attempt may have taken (a timed-out SET may
    // have landed too), everywhere at once.
    if !granted && outcomes.iter().any(|o| !matches!(o, Outcome::Held)) {
        release_all(n, connect, timer, opts.server_timeout, key, token, None).await;
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
pub async fn extend<C, F, Fut>(
    n: usize,
    connect: F,
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
    let report = extend_on_all(n, &connect, timer, key, token, ms, server_timeout).await?;
    if !report.granted {
        release_all(n, &connect, timer, server_timeout, key, token, None).await;
    }
    Ok(report)
}

/// What one renewal of a kept lock found (see [`renew`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Renewal {
    /// A majority extended it, with validity left.
    Renewed,
    /// A majority can no longer be reached: the key is gone or another
    /// owner's on too many servers.
    Lost,
    /// Not renewed this time (servers slow or away, or no validity left),
    /// but not known lost either; the tally says why.
    Unsure(String),
}

/// One renewal of a kept lock: [`extend`] without giving up on failure, so
/// the keeper can try again while the lease may still run.
#[allow(clippy::too_many_arguments)]
pub async fn renew<C, F, Fut>(
    n: usize,
    connect: F,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    ms: u64,
    server_timeout: Duration,
) -> Result<Renewal>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let report = extend_on_all(n, &connect, timer, key, token, ms, server_timeout).await?;
    let not_ours = report
        .outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::NotOurs))
        .count();
    Ok(if report.granted {
        Renewal::Renewed
    } else if not_ours > n - majority(n) {
        Renewal::Lost
    } else {
        let names: Vec<_> = report
            .outcomes
            .iter()
            .map(|o| o.name(Step::Extend))
            .collect();
        Renewal::Unsure(format!(
            "renewal not confirmed by a majority in time ({})",
            names.join(", ")
        ))
    })
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

impl renewal::Renewal for Kept {
    fn renew(&self, lease_ms: u64) -> BoxFuture<'_, Result<Option<Lost>>> {
        Box::pin(async move {
            let connect = |i: usize| self.servers[i].get();
            let n = self.servers.len();
            let (key, token) = (&self.key, &self.token);
            match renew(n, connect, &TokioTimer, key, token, lease_ms, self.within).await? {
                Renewal::Renewed => Ok(None),
                Renewal::Lost => Ok(Some(Lost::Expired)),
                Renewal::Unsure(why) => Err(Error::Timeout(why)),
            }
        })
    }

    fn margin_ms(&self, lease_ms: u64) -> u64 {
        drift_ms(lease_ms).max(0) as u64
    }
}

async fn extend_on_all<C, F, Fut>(
    n: usize,
    connect: &F,
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
    check(n, key, ms)?;
    let started = Instant::now();
    let outcomes = on_all(
        n,
        connect,
        timer,
        server_timeout,
        Settle::AllServers,
        |_, mut c: C| async move { token::extend(&mut c, key, token, ms).await },
    )
    .await;
    let validity = validity_ms(ms, started.elapsed());
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
pub async fn release<C, F, Fut>(
    n: usize,
    connect: F,
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
    let outcomes = release_all(n, &connect, timer, server_timeout, key, token, announce).await;
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
    n: usize,
    connect: &F,
    timer: &dyn Timer,
    server_timeout: Duration,
    key: &str,
    token: &str,
    announce: Option<&str>,
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
        |_, mut c: C| async move {
            match announce {
                Some(channel) => token::release_announced(&mut c, key, token, channel, false).await,
                None => token::release(&mut c, key, token).await,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majorities() {
        assert_eq!(majority(1), 1);
        assert_eq!(majority(2), 2);
        assert_eq!(majority(3), 2);
        assert_eq!(majority(5), 3);
    }

    #[test]
    fn validity_is_signed_and_never_overflows() {
        // 10 s lease, 30 ms spent: 10000 - 30 - (100 + 2).
        assert_eq!(validity_ms(10_000, Duration::from_millis(30)), 9_868);
        // A lease shorter than drift + latency: negative, not a wrap.
        assert!(validity_ms(5, Duration::from_millis(10)) < 0);
        assert!(validity_ms(1, Duration::ZERO) < 0);
        // 2^31 ms and the largest lease: no overflow.
        let big = 1u64 << 31;
        assert_eq!(
            validity_ms(big, Duration::from_millis(1)),
            big as i64 - 1 - (big / 100) as i64 - 2
        );
        assert!(validity_ms(MAX_MS, Duration::from_secs(u64::MAX / 2000)) < 0);
        assert!(validity_ms(MAX_MS, Duration::ZERO) > 0);
    }
}
