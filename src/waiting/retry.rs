//! The wait between attempts, one loop for every lock that retries (the
//! token lock's `acquire_with` on one server; Redlock's `acquire`).
//!
//! After a failed attempt come `retries` more (`Retries::Forever`: until
//! one wins), `delay` plus up to `jitter` apart. With wake-ups (each
//! server's wake-up source and the lock's release channel) a waiter
//! subscribes after its first failed attempt and tries again at once, so a
//! release between the two is not missed; then each pause also ends when
//! a release is announced on any server, for an attempt that does not count
//! as a retry. The pauses keep their schedule, so the whole wait stays
//! within `retries × (delay + jitter)`. If subscribing fails, the wait
//! polls. A cancel ends the wait at once: no attempt starts after it.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{select, Either};

use crate::error::Result;
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
}

/// One kind of attempt at a lock.
pub(crate) trait Attempt {
    /// What a winning attempt gives.
    type Won;
    /// What a failed one gives (the last is the wait's outcome).
    type Lost;
    /// One attempt: `Ok(won)`, or `Err(lost)` when it was not granted;
    /// an error (Redis failed) ends the wait.
    fn attempt(
        &mut self,
    ) -> impl Future<Output = Result<std::result::Result<Self::Won, Self::Lost>>>;
}

/// When to try again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    pub retries: Retries,
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
        attempts += 1;
        let mut lost = match a.attempt().await? {
            Ok(won) => return Ok(won_after(won, attempts)),
            Err(lost) => lost,
        };
        left = match left {
            Retries::Count(0) => return Ok(lost_after(lost, attempts)),
            _ if cancelled() => return Ok(lost_after(lost, attempts)),
            Retries::Count(k) => Retries::Count(k - 1),
            Retries::Forever => Retries::Forever,
        };
        if let (None, Some((sources, channel))) = (&sub, wake) {
            if let Some(mut s) = AnyRelease::subscribe(sources, channel).await {
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
        let until = Instant::now() + schedule.delay + jitter;
        loop {
            let rest = until.saturating_duration_since(Instant::now());
            match pause(timer, rest, sub.as_mut(), cancel).await {
                Woke::Cancelled => return Ok(lost_after(lost, attempts)),
                // Every subscriber failed: poll for the rest of the pause.
                Woke::SubscriberFailed => sub = None,
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
                }
            }
        }
        if cancelled() {
            return Ok(lost_after(lost, attempts));
        }
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
    SubscriberFailed,
}

/// Sleeps `rest`, or less: until a release on `sub` or a cancel.
async fn pause(
    timer: &dyn Timer,
    rest: Duration,
    sub: Option<&mut AnyRelease>,
    cancel: Option<&Cancel>,
) -> Woke {
    if cancel.is_some_and(Cancel::is_cancelled) {
        return Woke::Cancelled;
    }
    if rest.is_zero() {
        return Woke::Timer;
    }
    let sleep = timer.sleep(rest);
    if sub.is_none() && cancel.is_none() {
        // redislock's own retry: just the pause.
        sleep.await;
        return Woke::Timer;
    }
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
                Either::Left((Either::Left((Err(_), _)), _)) => Woke::SubscriberFailed,
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
