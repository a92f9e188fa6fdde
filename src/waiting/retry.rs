//! The wait between attempts, one loop for every lock that retries (the
//! token lock's `acquire_with` on one server; Redlock's `acquire`;
//! Redisson's reentrant `tryLock`).
//!
//! After a failed attempt come `retries` more (`Retries::Forever`: until
//! one wins; `Retries::Until`: until a deadline), `delay` plus up to
//! `jitter` apart. An attempt's outcome may carry a hint, "held, retry in
//! at most N ms" (a Redisson holder's PTTL: past it the key has expired),
//! which ends that pause sooner. With wake-ups (each server's wake-up
//! source and the lock's release channel) a waiter subscribes after its
//! first failed attempt and tries again at once, so a release between the
//! two is not missed; then each pause also ends when a release is announced
//! on any server, for an attempt that does not count as a retry. The pauses
//! keep their schedule, so the whole wait stays within
//! `retries × (delay + jitter)` (or the deadline). If subscribing fails, the
//! wait polls (or, for an attempt with [`Attempt::WAKEUPS_REQUIRED`], ends
//! with the error). A cancel ends the wait at once: no attempt starts after
//! it.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{select, Either};

use crate::error::{Error, Result};
use crate::waiting::cancel::Cancel;
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::{AnyRelease, Wakeups};

/// How many attempts an acquire makes after the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retries {
    /// Keep trying until the lock is free (redislock's `retries: -1`).
    Forever,
    /// This many more attempts after the first one.
    Count(u64),
    /// Keep trying until this instant (on the wait's [`Timer`] clock):
    /// Redisson's `waitTime`. A pause never runs past it, and no pause
    /// starts at or after it; the attempt that ends a pause at the
    /// deadline is the last.
    Until(Instant),
}

/// One kind of attempt at a lock.
pub(crate) trait Attempt {
    /// What a winning attempt gives.
    type Won;
    /// What a failed one gives (the last is the wait's outcome).
    type Lost;
    /// `true`: a wait that cannot subscribe to its wake-ups, or whose
    /// subscriber fails, ends with that error (node-redisson's `tryLock`);
    /// `false`: it polls on its schedule instead.
    const WAKEUPS_REQUIRED: bool = false;
    /// One attempt: `Ok(won)`, or `Err(lost)` when it was not granted;
    /// an error (Redis failed) ends the wait.
    fn attempt(
        &mut self,
    ) -> impl Future<Output = Result<std::result::Result<Self::Won, Self::Lost>>>;
    /// "Held, retry in at most this long": the pause after `lost` ends by
    /// then, if its schedule has not ended it sooner. `None`: no hint.
    fn retry_within(_lost: &Self::Lost) -> Option<Duration> {
        None
    }
}

/// When to try again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    pub retries: Retries,
    /// The pause after a failed attempt; `Duration::MAX`: no bound of its
    /// own (the pause ends on a hint, the deadline, a wake-up or a cancel).
    pub delay: Duration,
    /// Up to this much random extra wait per pause (zero: none).
    pub jitter: Duration,
}

/// How a wait ended, and after how many attempts (wake-ups' included).
pub(crate) struct Waited<W, L> {
    pub outcome: std::result::Result<W, L>,
    pub attempts: u64,
}

/// Runs `a` until it wins, the schedule is spent or `cancel` fires.
/// `random` gives a number in 0..1 for the jitter; `wake` is each server's
/// wake-up source and the release channel.
pub(crate) async fn retry<A: Attempt>(
    a: &mut A,
    timer: &dyn Timer,
    schedule: &Schedule,
    random: &(dyn Fn() -> f64 + Sync),
    wake: Option<(&[Arc<Wakeups>], &str)>,
    cancel: Option<&Cancel>,
) -> Result<Waited<A::Won, A::Lost>> {
    let cancelled = || cancel.is_some_and(Cancel::is_cancelled);
    let mut left = schedule.retries;
    let mut attempts = 0;
    let mut sub: Option<AnyRelease> = None;
    loop {
        if let Some(s) = sub.as_mut() {
            // A release after this is caught by the next pause.
            s.mark();
        }
        attempts += 1;
        let mut lost = match a.attempt().await? {
            Ok(won) => return Ok(won_after(won, attempts)),
            Err(lost) => lost,
        };
        left = match left {
            Retries::Count(0) => return Ok(lost_after(lost, attempts)),
            _ if cancelled() => return Ok(lost_after(lost, attempts)),
            Retries::Count(k) => Retries::Count(k - 1),
            // A deadline is checked where a pause would start.
            other => other,
        };
        if let (None, Some((sources, channel))) = (&sub, wake) {
            let subscribed = match A::WAKEUPS_REQUIRED {
                true => Some(AnyRelease::subscribe_every(sources, channel).await?),
                false => AnyRelease::subscribe(sources, channel).await,
            };
            if let Some(mut s) = subscribed {
                // Subscribed now: a release since the failed attempt is
                // caught by this one.
                s.mark();
                attempts += 1;
                match a.attempt().await? {
                    Ok(won) => return Ok(won_after(won, attempts)),
                    Err(l) => lost = l,
                }
                sub = Some(s);
            }
        }
        let jitter = match schedule.jitter.is_zero() {
            true => Duration::ZERO,
            false => schedule.jitter.mul_f64(random().clamp(0.0, 1.0)),
        };
        // The schedule's end of this pause (`None`: unbounded), kept
        // across wake-ups; a hint may end it sooner.
        let mut until = timer
            .now()
            .checked_add(schedule.delay.saturating_add(jitter));
        if let Retries::Until(deadline) = left {
            until = Some(until.map_or(deadline, |u| u.min(deadline)));
        }
        let mut ends = hinted::<A>(timer, until, &lost);
        loop {
            let now = timer.now();
            if matches!(left, Retries::Until(d) if now >= d) {
                return Ok(lost_after(lost, attempts));
            }
            let rest = ends.map(|e| e.saturating_duration_since(now));
            match pause(timer, rest, sub.as_mut(), cancel).await {
                Woke::Cancelled => return Ok(lost_after(lost, attempts)),
                Woke::SubscriberFailed(e) if A::WAKEUPS_REQUIRED => return Err(e),
                // Every subscriber failed: poll for the rest of the pause.
                Woke::SubscriberFailed(_) => sub = None,
                Woke::Timer => break,
                Woke::Release => {
                    if let Some(s) = sub.as_mut() {
                        s.mark();
                    }
                    attempts += 1;
                    match a.attempt().await? {
                        Ok(won) => return Ok(won_after(won, attempts)),
                        Err(l) => lost = l,
                    }
                    ends = hinted::<A>(timer, until, &lost);
                }
            }
        }
        if cancelled() {
            return Ok(lost_after(lost, attempts));
        }
    }
}

/// The end of a pause: the schedule's `until`, or sooner if `lost` says
/// when to try again.
fn hinted<A: Attempt>(
    timer: &dyn Timer,
    until: Option<Instant>,
    lost: &A::Lost,
) -> Option<Instant> {
    match A::retry_within(lost).and_then(|h| timer.now().checked_add(h)) {
        Some(by_hint) => Some(until.map_or(by_hint, |u| u.min(by_hint))),
        None => until,
    }
}

fn won_after<W, L>(won: W, attempts: u64) -> Waited<W, L> {
    Waited {
        outcome: Ok(won),
        attempts,
    }
}

fn lost_after<W, L>(lost: L, attempts: u64) -> Waited<W, L> {
    Waited {
        outcome: Err(lost),
        attempts,
    }
}

/// What ended a pause between attempts.
enum Woke {
    Timer,
    Release,
    Cancelled,
    SubscriberFailed(Error),
}

/// Sleeps `rest` (`None`: without end), or less: until a release on `sub`
/// or a cancel.
async fn pause(
    timer: &dyn Timer,
    rest: Option<Duration>,
    sub: Option<&mut AnyRelease>,
    cancel: Option<&Cancel>,
) -> Woke {
    if cancel.is_some_and(Cancel::is_cancelled) {
        return Woke::Cancelled;
    }
    if rest.is_some_and(|r| r.is_zero()) {
        return Woke::Timer;
    }
    let sleep = async {
        match rest {
            Some(r) => timer.sleep(r).await,
            None => std::future::pending().await,
        }
    };
    if sub.is_none() && cancel.is_none() {
        // redislock's own retry: just the pause.
        sleep.await;
        return Woke::Timer;
    }
    let sleep = std::pin::pin!(sleep);
    let stop = std::pin::pin!(async {
        match cancel {
            Some(c) => c.cancelled().await,
            None => std::future::pending().await,
        }
    });
    match sub {
        Some(s) => {
            let woken = std::pin::pin!(s.wait());
            match select(select(woken, sleep), stop).await {
                Either::Left((Either::Left((Ok(()), _)), _)) => Woke::Release,
                Either::Left((Either::Left((Err(e), _)), _)) => Woke::SubscriberFailed(e),
                Either::Left((Either::Right(_), _)) => Woke::Timer,
                Either::Right(_) => Woke::Cancelled,
            }
        }
        None => match select(sleep, stop).await {
            Either::Left(_) => Woke::Timer,
            Either::Right(_) => Woke::Cancelled,
        },
    }
}
