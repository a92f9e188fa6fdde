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
    /// Both bounds: at most this many more attempts, and none after the
    /// instant (redis-semaphore's `acquireAttemptsLimit` with its
    /// `acquireTimeout`).
    Bounded(u64, Instant),
}

impl Retries {
    /// The deadline, if this schedule has one.
    pub fn deadline(self) -> Option<Instant> {
        match self {
            Retries::Until(d) | Retries::Bounded(_, d) => Some(d),
            _ => None,
        }
    }
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
    /// `true`: the waiters of a lock take it one at a time, so a release
    /// announced as Redisson's `UNLOCK_MESSAGE` wakes one waiter of this
    /// process, not all (waiting/wakeups.rs); Redisson's exclusive locks.
    const ONE_AT_A_TIME: bool = false;
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
/// wake-up source and the release channels (a release on any of them ends
/// a pause).
pub(crate) async fn retry<A: Attempt>(
    a: &mut A,
    timer: &dyn Timer,
    schedule: &Schedule,
    random: &(dyn Fn() -> f64 + Sync),
    wake: Option<(&[Arc<Wakeups>], &[&str])>,
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
            Retries::Count(0) | Retries::Bounded(0, _) => return Ok(lost_after(lost, attempts)),
            _ if cancelled() => return Ok(lost_after(lost, attempts)),
            Retries::Count(k) => Retries::Count(k - 1),
            Retries::Bounded(k, d) => Retries::Bounded(k - 1, d),
            // A deadline is checked where a pause would start.
            other => other,
        };
        if let (None, Some((sources, channels))) = (&sub, wake) {
            // Boxed: a subscribe's future is about 4 KB, and held inline it
            // would make every operation's future (and the copies of it
            // made to spawn it) that much larger, waiting or not
            // (benchmark/NOTES.md §28). This runs once per wait.
            let subscribed = match A::WAKEUPS_REQUIRED {
                true => Some(
                    Box::pin(AnyRelease::subscribe_every(
                        sources,
                        channels,
                        A::ONE_AT_A_TIME,
                    ))
                    .await?,
                ),
                false => Box::pin(AnyRelease::subscribe(sources, channels, A::ONE_AT_A_TIME)).await,
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
        if let Some(deadline) = left.deadline() {
            until = Some(until.map_or(deadline, |u| u.min(deadline)));
        }
        let mut ends = hinted::<A>(timer, until, &lost);
        loop {
            let now = timer.now();
            if left.deadline().is_some_and(|d| now >= d) {
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
            // Boxed, as the subscribe in `retry` is: about 4 KB that would
            // otherwise be part of every operation's future.
            let woken = Box::pin(s.wait());
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::BoxFuture;
    use futures_util::FutureExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A manual clock: a sleep ends at once and moves the clock by its
    /// length, except from the `hang_from`th one on, which never ends (the
    /// pause must end by a wake-up or a cancel).
    struct Clock {
        now: Mutex<Instant>,
        slept: Mutex<Vec<Duration>>,
        hang_from: usize,
    }

    impl Clock {
        fn new() -> Clock {
            Clock::hanging_from(usize::MAX)
        }

        fn hanging_from(hang_from: usize) -> Clock {
            Clock {
                now: Mutex::new(Instant::now()),
                slept: Mutex::default(),
                hang_from,
            }
        }

        fn advance(&self, d: Duration) {
            *self.now.lock().unwrap() += d;
        }

        fn slept(&self) -> Vec<Duration> {
            self.slept.lock().unwrap().clone()
        }
    }

    impl Timer for Clock {
        fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
            let mut slept = self.slept.lock().unwrap();
            slept.push(d);
            if slept.len() > self.hang_from {
                return std::future::pending().boxed();
            }
            self.advance(d);
            std::future::ready(()).boxed()
        }

        fn now(&self) -> Instant {
            *self.now.lock().unwrap()
        }
    }

    /// What a fake attempt lost: its number and its hint.
    #[derive(Debug, PartialEq)]
    struct Lost {
        n: u64,
        hint: Option<Duration>,
    }

    /// An attempt that wins at its `wins_at`th call (never: `None`), takes
    /// `takes` of the clock's time, loses with `hints[n - 1]` (none beyond)
    /// and runs `then(n)` after each call (a release, a cancel).
    struct Fake<'a, const REQUIRED: bool = false> {
        clock: &'a Clock,
        n: u64,
        wins_at: Option<u64>,
        takes: Duration,
        hints: Vec<Option<u64>>,
        then: Box<dyn FnMut(u64) + 'a>,
    }

    fn fake<const R: bool>(clock: &Clock, wins_at: Option<u64>) -> Fake<'_, R> {
        Fake {
            clock,
            n: 0,
            wins_at,
            takes: Duration::ZERO,
            hints: Vec::new(),
            then: Box::new(|_| {}),
        }
    }

    impl<const REQUIRED: bool> Attempt for Fake<'_, REQUIRED> {
        type Won = u64;
        type Lost = Lost;
        const WAKEUPS_REQUIRED: bool = REQUIRED;

        async fn attempt(&mut self) -> Result<std::result::Result<u64, Lost>> {
            self.n += 1;
            let n = self.n;
            self.clock.advance(self.takes);
            (self.then)(n);
            if self.wins_at == Some(n) {
                return Ok(Ok(n));
            }
            let hint = self.hints.get(n as usize - 1).copied().flatten().map(ms);
            Ok(Err(Lost { n, hint }))
        }

        fn retry_within(lost: &Lost) -> Option<Duration> {
            lost.hint
        }
    }

    fn spaced(retries: Retries, delay: Duration, jitter: Duration) -> Schedule {
        Schedule {
            retries,
            delay,
            jitter,
        }
    }

    fn until(clock: &Clock, d: Duration) -> Retries {
        Retries::Until(clock.now() + d)
    }

    async fn run<const R: bool>(
        a: &mut Fake<'_, R>,
        schedule: Schedule,
        wake: Option<(&[Arc<Wakeups>], &[&str])>,
        cancel: Option<&Cancel>,
    ) -> Result<Waited<u64, Lost>> {
        let clock = a.clock;
        retry(a, clock, &schedule, &|| 0.0, wake, cancel).await
    }

    fn lost(n: u64) -> std::result::Result<u64, Lost> {
        Err(Lost { n, hint: None })
    }

    #[tokio::test]
    async fn bounded_stops_at_whichever_bound_comes_first() {
        // The count first: 2 more attempts, well within the deadline.
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let deadline = clock.now() + ms(10_000);
        let schedule = spaced(Retries::Bounded(2, deadline), ms(100), ms(0));
        let w = run(&mut a, schedule, None, None).await.unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(3), 3));
        assert_eq!(clock.slept(), vec![ms(100); 2]);
        // The deadline first: 250 ms allow pauses of 100, 100, 50.
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let deadline = clock.now() + ms(250);
        let schedule = spaced(Retries::Bounded(100, deadline), ms(100), ms(0));
        let w = run(&mut a, schedule, None, None).await.unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(4), 4));
        assert_eq!(clock.slept(), vec![ms(100), ms(100), ms(50)]);
    }

    #[tokio::test]
    async fn retries_count_after_the_first_attempt() {
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let w = run(
            &mut a,
            spaced(Retries::Count(3), ms(100), ms(0)),
            None,
            None,
        )
        .await
        .unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(4), 4));
        assert_eq!(clock.slept(), vec![ms(100); 3]);

        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let w = run(
            &mut a,
            spaced(Retries::Count(0), ms(100), ms(0)),
            None,
            None,
        )
        .await
        .unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(1), 1));
        assert!(clock.slept().is_empty(), "no pause after the only attempt");
    }

    #[tokio::test]
    async fn a_win_ends_the_wait() {
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, Some(3));
        let w = run(
            &mut a,
            spaced(Retries::Count(5), ms(100), ms(0)),
            None,
            None,
        )
        .await
        .unwrap();
        assert_eq!((w.outcome.ok(), w.attempts), (Some(3), 3));
        assert_eq!(clock.slept(), vec![ms(100); 2]);

        let clock = Clock::new();
        let mut a = fake::<false>(&clock, Some(50));
        let w = run(&mut a, spaced(Retries::Forever, ms(10), ms(0)), None, None)
            .await
            .unwrap();
        assert_eq!((w.outcome.ok(), w.attempts), (Some(50), 50));
        assert_eq!(clock.slept(), vec![ms(10); 49]);
    }

    #[tokio::test]
    async fn jitter_stays_within_its_bounds() {
        // The random numbers, out of range ones clamped to 0..1.
        const RANDOM: [f64; 5] = [0.0, 0.5, 1.0, 7.0, -2.0];
        let next = AtomicUsize::new(0);
        let random = || RANDOM[next.fetch_add(1, Ordering::Relaxed)];
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let schedule = spaced(Retries::Count(5), ms(100), ms(50));
        let w = retry(&mut a, &clock, &schedule, &random, None, None)
            .await
            .unwrap();
        assert_eq!(w.attempts, 6);
        assert_eq!(
            clock.slept(),
            vec![ms(100), ms(125), ms(150), ms(150), ms(100)]
        );
    }

    #[tokio::test]
    async fn a_deadline_bounds_every_pause_and_ends_the_wait() {
        // Attempts of 40 ms, 100 ms apart, for 250 ms: at 0, 140 and at the
        // deadline (the pause is cut to it); none after it.
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        a.takes = ms(40);
        let schedule = spaced(until(&clock, ms(250)), ms(100), ms(0));
        let w = run(&mut a, schedule, None, None).await.unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(3), 3));
        assert_eq!(clock.slept(), vec![ms(100), ms(70)]);

        // No delay of its own: one pause, to the deadline, one last attempt.
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let schedule = spaced(until(&clock, ms(250)), Duration::MAX, ms(0));
        let w = run(&mut a, schedule, None, None).await.unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(2), 2));
        assert_eq!(clock.slept(), vec![ms(250)]);

        // A first attempt that outlasts the deadline is the only one.
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        a.takes = ms(300);
        let schedule = spaced(until(&clock, ms(250)), Duration::MAX, ms(0));
        let w = run(&mut a, schedule, None, None).await.unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(1), 1));
        assert!(clock.slept().is_empty());
    }

    #[tokio::test]
    async fn a_hint_ends_a_pause_sooner() {
        // No delay of its own: each pause is the hint; a zero hint retries
        // at once, without sleeping.
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, Some(4));
        a.hints = vec![Some(30), Some(70), Some(0)];
        let schedule = spaced(Retries::Forever, Duration::MAX, ms(0));
        let w = run(&mut a, schedule, None, None).await.unwrap();
        assert_eq!((w.outcome.ok(), w.attempts), (Some(4), 4));
        assert_eq!(clock.slept(), vec![ms(30), ms(70)]);
    }

    #[tokio::test]
    async fn a_hint_is_capped_by_the_schedule() {
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        a.hints = vec![Some(500), Some(20)];
        let schedule = spaced(Retries::Count(2), ms(100), ms(0));
        let w = run(&mut a, schedule, None, None).await.unwrap();
        assert_eq!(w.attempts, 3);
        assert_eq!(clock.slept(), vec![ms(100), ms(20)]);

        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        a.hints = vec![Some(500); 3];
        let schedule = spaced(until(&clock, ms(50)), Duration::MAX, ms(0));
        let w = run(&mut a, schedule, None, None).await.unwrap();
        assert_eq!(w.attempts, 2);
        assert_eq!(clock.slept(), vec![ms(50)]);
    }

    #[tokio::test]
    async fn subscribes_after_the_first_failure_and_tries_again_at_once() {
        let wake = [Wakeups::offline("ch")];
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let schedule = spaced(Retries::Count(2), ms(100), ms(0));
        let w = run(&mut a, schedule, Some((&wake, &["ch"])), None)
            .await
            .unwrap();
        // 1, the subscribed one (not a retry), then the two retries.
        assert_eq!((w.outcome, w.attempts), (lost(4), 4));
        assert_eq!(clock.slept(), vec![ms(100); 2]);
    }

    #[tokio::test]
    async fn a_wake_up_ends_a_pause_early_but_keeps_the_schedule() {
        // Attempts of 10 ms; a release during the second one. The third
        // runs at once, and the pause goes on to 100 ms after the second.
        let wake = [Wakeups::offline("ch")];
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        a.takes = ms(10);
        let source = Arc::clone(&wake[0]);
        a.then = Box::new(move |n| {
            if n == 2 {
                source.announce("ch");
            }
        });
        let schedule = spaced(Retries::Count(1), ms(100), ms(0));
        let w = run(&mut a, schedule, Some((&wake, &["ch"])), None)
            .await
            .unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(4), 4));
        assert_eq!(clock.slept(), vec![ms(90)]);
    }

    #[tokio::test]
    async fn after_a_wake_up_the_new_hint_bounds_the_pause() {
        // A Redisson waiter: the holder that took over has 40 ms left.
        let wake = [Wakeups::offline("ch")];
        let clock = Clock::new();
        let mut a = fake::<true>(&clock, Some(4));
        a.hints = vec![Some(1000), Some(1000), Some(40)];
        let source = Arc::clone(&wake[0]);
        a.then = Box::new(move |n| {
            if n == 2 {
                source.announce("ch");
            }
        });
        let schedule = spaced(Retries::Forever, Duration::MAX, ms(0));
        let w = run(&mut a, schedule, Some((&wake, &["ch"])), None)
            .await
            .unwrap();
        assert_eq!((w.outcome.ok(), w.attempts), (Some(4), 4));
        assert_eq!(clock.slept(), vec![ms(40)]);
    }

    #[tokio::test]
    async fn a_cancel_after_an_attempt_starts_no_pause() {
        let cancel = Cancel::default();
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let c = &cancel;
        a.then = Box::new(move |_| c.cancel());
        let schedule = spaced(Retries::Count(5), ms(100), ms(0));
        let w = run(&mut a, schedule, None, Some(&cancel)).await.unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(1), 1));
        assert!(clock.slept().is_empty());
    }

    #[tokio::test]
    async fn a_cancel_ends_a_pause_at_once() {
        for subscribed in [false, true] {
            let wake = [Wakeups::offline("ch")];
            let wake = subscribed.then_some((&wake[..], &["ch"][..]));
            let cancel = Arc::new(Cancel::default());
            // Every sleep hangs: only the cancel can end the pause.
            let clock = Clock::hanging_from(0);
            let mut a = fake::<false>(&clock, None);
            let c = Arc::clone(&cancel);
            std::thread::spawn(move || {
                std::thread::sleep(ms(20));
                c.cancel();
            });
            let schedule = spaced(Retries::Forever, ms(60_000), ms(0));
            let waited = run(&mut a, schedule, wake, Some(&cancel));
            let w = tokio::time::timeout(Duration::from_secs(5), waited)
                .await
                .expect("the cancel ends the wait")
                .unwrap();
            let n = 1 + u64::from(subscribed);
            assert_eq!((w.outcome, w.attempts), (lost(n), n));
            assert_eq!(clock.slept(), vec![ms(60_000)]);
        }
    }

    #[tokio::test]
    async fn a_failed_subscription_polls_unless_wake_ups_are_required() {
        // Nothing listens on port 1: subscribing fails.
        let spec = crate::transport::endpoint::EndpointSpec {
            url: Some("redis://127.0.0.1:1".into()),
            ..Default::default()
        };
        let endpoint = crate::transport::endpoint::Endpoint::resolve(spec).unwrap();
        let source = crate::waiting::wakeups::Source::PubSub;
        let wake = [Wakeups::new(
            &endpoint,
            source,
            &tokio::runtime::Handle::current(),
        )];
        let schedule = spaced(Retries::Count(1), ms(100), ms(0));

        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let w = run(&mut a, schedule, Some((&wake, &["ch"])), None)
            .await
            .unwrap();
        assert_eq!((w.outcome, w.attempts), (lost(2), 2));
        assert_eq!(clock.slept(), vec![ms(100)]);

        let clock = Clock::new();
        let mut a = fake::<true>(&clock, None);
        let w = run(&mut a, schedule, Some((&wake, &["ch"])), None).await;
        assert!(w.is_err(), "the subscriber's error ends the wait");
        assert_eq!(a.n, 1);
        assert!(clock.slept().is_empty());
    }

    #[test]
    fn the_wait_keeps_wakeups_off_the_retry_future() {
        // Every operation's future holds a retry future, waiting or not,
        // and is copied whole when it is spawned and kept whole while it
        // is pending. The wake-up subscribe and wait futures are boxed, so
        // they count here as a pointer (they were about 4 KB each inline:
        // benchmark/NOTES.md §28). The bound is the attempt's future plus
        // the loop's own state, with room to spare.
        let clock = Clock::new();
        let mut a = fake::<false>(&clock, None);
        let schedule = spaced(Retries::Count(1), ms(100), ms(0));
        let attempt = std::mem::size_of_val(&a.attempt());
        let f = retry(&mut a, &clock, &schedule, &|| 0.0, None, None);
        let size = std::mem::size_of_val(&f);
        assert!(
            size <= attempt + 1024,
            "the retry future is {size} bytes for an attempt of {attempt}"
        );
    }
}
