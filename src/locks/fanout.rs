//! A fan-out over independent servers, shared by every lock kind that runs
//! on several (Redlock's `quorum`, node-redlock's `redlock`, the
//! redis-semaphore Redlock variants): [`on_all`] sends one step to every
//! server at once, each bounded by a server timeout, and settles as
//! [`Settle`] says; each server's [`Outcome`] comes back as data, with the
//! [`Report`] of a step, the [`majority`] rule and the validity a majority
//! vouches for (the lease less the clocks' drift, signed: it can be
//! negative).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_util::future::{join_all, poll_fn, select, Either};
use futures_util::stream::{FuturesUnordered, StreamExt};
use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::limits::MAX_MS;
use crate::waiting::timer::Timer;

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
pub(crate) fn final_once_sent<C>(_: usize, _: &C) -> bool {
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
    /// is valid: the attempt's start plus the lease, less the drift
    /// ([`drift_ms`] with `drift_factor`).
    pub fn valid_until(&self, ttl_ms: u64, drift_factor: f64) -> Instant {
        let ms = (ttl_ms.min(MAX_MS) as i64 - drift_ms(ttl_ms, drift_factor)).max(0) as u64;
        self.started + Duration::from_millis(ms)
    }
}

/// How many servers are a majority of `n`.
pub fn majority(n: usize) -> usize {
    n / 2 + 1
}

/// The clock drift allowed for a lease of `ttl_ms`: `round(factor × ttl)
/// + 2` ms (Redis's 1 ms expiry precision plus the clocks' drift; Redlock's
/// rule, node-redlock's `driftFactor`, 0.01 by default).
pub fn drift_ms(ttl_ms: u64, factor: f64) -> i64 {
    let d = (factor * ttl_ms.min(MAX_MS) as f64).round();
    // NaN or a negative factor allows no drift of its own; a huge one, all.
    let d = if d > 0.0 {
        d.min(MAX_MS as f64) as i64
    } else {
        0
    };
    d + 2
}

/// The validity left of a lease of `ttl_ms` granted by an attempt started
/// `elapsed` ago, less the drift for `factor`. Signed: negative when the
/// attempt took too long.
pub fn validity_ms(ttl_ms: u64, elapsed: Duration, factor: f64) -> i64 {
    let ttl = ttl_ms.min(MAX_MS) as i64;
    let elapsed = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
    ttl.saturating_sub(elapsed)
        .saturating_sub(drift_ms(ttl_ms, factor))
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
    fn drift_is_redlocks() {
        assert_eq!(drift_ms(10_000, 0.01), 102);
        assert_eq!(drift_ms(10_000, 0.0), 2);
        assert_eq!(drift_ms(150, 0.01), 4); // round(1.5) = 2
        assert_eq!(drift_ms(1_000, f64::NAN), 2);
    }

    #[test]
    fn validity_is_signed_and_never_overflows() {
        // 10 s lease, 30 ms spent: 10000 - 30 - (100 + 2).
        assert_eq!(validity_ms(10_000, Duration::from_millis(30), 0.01), 9_868);
        // A lease shorter than drift + latency: negative, not a wrap.
        assert!(validity_ms(5, Duration::from_millis(10), 0.01) < 0);
        assert!(validity_ms(1, Duration::ZERO, 0.01) < 0);
        assert!(validity_ms(3, Duration::from_millis(5), 0.01) < 0);
        // 2^31 ms and the largest lease: no overflow.
        let big = 1u64 << 31;
        assert_eq!(
            validity_ms(big, Duration::from_millis(1), 0.01),
            big as i64 - 1 - (big / 100) as i64 - 2
        );
        assert!(validity_ms(MAX_MS, Duration::from_secs(u64::MAX / 2000), 0.01) < 0);
        assert!(validity_ms(MAX_MS, Duration::ZERO, 0.01) > 0);
        assert!(validity_ms(MAX_MS, Duration::ZERO, 1e300) < 0);
    }
}
