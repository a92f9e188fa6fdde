//! The lease keeper: renews the leases of held locks from the tokio thread,
//! so a lock survives a JavaScript event loop that is blocked for longer
//! than its lease — the Redisson face's watchdog, the redislock face's
//! `autoExtend`, node-redlock 5's `using()` and redis-semaphore's refresh.
//!
//! One renewal task per held lock (server, key, owner), every `lease / 3`
//! on tokio's monotonic clock. Renewals of many locks that fall due together
//! go out in one write on the server's shared connection (the connection
//! batches what is queued at once). Releasing first [`pause`]s the task and
//! waits for a renewal in flight, so no renewal command is ever sent after
//! the release. Nothing here keeps Node alive.
//!
//! How a lock is renewed is its kind's own ([`Renewal`], implemented
//! beside each kind's scripts in `locks/`): one server or a quorum, its
//! script, what a refusal means, how much less than the lease a confirmed
//! renewal vouches for (Redlock's drift). The keeper names no lock family.
//!
//! A lock kept with a [`Watch`] is also bounded: renewal stops when the
//! JavaScript thread has not shown it is alive ([`Liveness::beat`]) within
//! `max_lag`, or when the hold has lasted `max_hold`; and every end that is
//! not a release — those two, the key gone or carrying another owner, Redis
//! not confirming a renewal before the lease ran out — is reported as a
//! [`Lost`] for JavaScript to collect ([`Liveness::drain`]). An environment
//! that is torn down (a worker terminated) [`end`]s its leases at once,
//! reporting nothing. The key is never deleted here: a lock that is not
//! renewed expires by its TTL.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::OwnedMutexGuard;

pub use crate::locks::renewal::{Lost, Renewal};
use crate::transport::connection::SharedConnection;

/// A kept lock's name: (its first server, lock key, owner, family). The
/// family is the lock kind's own tag (`token::KEPT`, `reentrant::KEPT`, …),
/// so two kinds' locks of one key and owner are never confused; the keeper
/// only compares it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Held {
    server: usize,
    pub name: String,
    pub owner: String,
    family: &'static str,
}

impl Held {
    pub fn new(
        server: &Arc<SharedConnection>,
        name: &str,
        owner: &str,
        family: &'static str,
    ) -> Held {
        Held {
            server: Arc::as_ptr(server) as usize,
            name: name.to_string(),
            owner: owner.to_string(),
            family,
        }
    }

    /// Whether this is `name` on the same server as `other`.
    pub fn same_lock(&self, server: &Arc<SharedConnection>, name: &str) -> bool {
        self.server == Arc::as_ptr(server) as usize && self.name == name
    }

    /// Whether it is of lock family `family` (a kind's `KEPT` tag).
    pub fn is(&self, family: &'static str) -> bool {
        self.family == family
    }
}

static BASE: LazyLock<Instant> = LazyLock::new(Instant::now);

/// `t` in milliseconds on a process-wide monotonic clock (an instant before
/// the clock's start reads as its start: early, so on the safe side).
fn at_ms(t: Instant) -> u64 {
    t.saturating_duration_since(*BASE).as_millis() as u64
}

fn now_ms() -> u64 {
    at_ms(Instant::now())
}

/// One JavaScript environment's heartbeat and its inbox of lost locks.
#[derive(Default)]
pub struct Liveness {
    last_beat: AtomicU64,
    lost: Mutex<Vec<(u32, Lost)>>,
    /// The holds renewed since the last [`drain_renewals`](Self::drain_renewals).
    renewed: Mutex<Vec<u32>>,
    /// The environment is gone ([`end`]): nothing of it is kept any more.
    ended: AtomicBool,
}

impl Liveness {
    pub fn new() -> Arc<Liveness> {
        let l = Liveness::default();
        l.beat();
        Arc::new(l)
    }

    /// The JavaScript thread is alive now.
    pub fn beat(&self) {
        self.last_beat.store(now_ms(), Ordering::Release);
    }

    /// The losses reported since the last call, as (hold id, why).
    pub fn drain(&self) -> Vec<(u32, Lost)> {
        std::mem::take(&mut *locked(&self.lost))
    }

    fn report(&self, hold: u32, why: Lost) {
        locked(&self.lost).push((hold, why));
    }

    /// The holds renewed since the last call (one entry per renewal).
    pub fn drain_renewals(&self) -> Vec<u32> {
        std::mem::take(&mut *locked(&self.renewed))
    }

    fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn lag(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.last_beat.load(Ordering::Acquire)))
    }
}

/// The bounds of a lock kept for JavaScript, and where to report its loss.
#[derive(Clone)]
pub struct Watch {
    pub liveness: Arc<Liveness>,
    /// JavaScript's name for this hold, given back with its loss.
    pub hold: u32,
    pub max_lag: Duration,
    pub max_hold: Option<Duration>,
}

struct Entry {
    /// Held while a renewal is in flight, and by a release under way.
    gate: Arc<tokio::sync::Mutex<()>>,
    stopped: Arc<AtomicBool>,
    /// The lease renewals set, in ms (an `extend` changes it).
    lease_ms: Arc<AtomicU64>,
    /// Until when (`now_ms` clock) the lease is known to run: the send time
    /// of the last confirmed renewal plus the lease.
    confirmed_until: Arc<AtomicU64>,
    /// The environment it is kept for (`None`: kept for no JavaScript).
    liveness: Option<Arc<Liveness>>,
    /// Ends the wait for the next renewal at once ([`nudge`]).
    nudge: Arc<tokio::sync::Notify>,
}

static RUNNING: LazyLock<Mutex<HashMap<Held, Entry>>> = LazyLock::new(Mutex::default);

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Poisoning only means a panic elsewhere; the data stays consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn running() -> std::sync::MutexGuard<'static, HashMap<Held, Entry>> {
    locked(&RUNNING)
}

/// Keeps `held`'s lease at `lease_ms` by `renewal`, renewing every
/// `lease_ms / 3` until stopped. `granted` is when the grant's command was
/// sent (the lease runs from no earlier) and `valid_until` how long the
/// grant vouches for (the lease from `granted`; less for Redlock). A second
/// start for a lock already kept does nothing, nor does a start for an
/// environment that has [`end`]ed.
pub fn start(
    rt: &Handle,
    renewal: Box<dyn Renewal>,
    held: Held,
    lease_ms: u64,
    granted: Instant,
    valid_until: Instant,
    watch: Option<Watch>,
) {
    let (gate, stopped, lease, confirmed, nudge) = {
        let mut map = running();
        // Checked under the map's lock, which `end` holds while it marks
        // the environment ended: no entry of an ended one is left behind.
        if map.contains_key(&held) || watch.as_ref().is_some_and(|w| w.liveness.ended()) {
            return;
        }
        let entry = Entry {
            gate: Arc::new(tokio::sync::Mutex::new(())),
            stopped: Arc::new(AtomicBool::new(false)),
            lease_ms: Arc::new(AtomicU64::new(lease_ms)),
            confirmed_until: Arc::new(AtomicU64::new(at_ms(valid_until))),
            liveness: watch.as_ref().map(|w| Arc::clone(&w.liveness)),
            nudge: Arc::new(tokio::sync::Notify::new()),
        };
        let parts = (
            Arc::clone(&entry.gate),
            Arc::clone(&entry.stopped),
            Arc::clone(&entry.lease_ms),
            Arc::clone(&entry.confirmed_until),
            Arc::clone(&entry.nudge),
        );
        map.insert(held.clone(), entry);
        parts
    };
    if let Some(w) = &watch {
        // The acquire that got here was JavaScript's own call.
        w.liveness.beat();
    }
    rt.spawn(async move {
        let lose = |why: Lost| {
            stopped.store(true, Ordering::Release);
            forget(&held, &stopped);
            if let Some(w) = &watch {
                w.liveness.report(w.hold, why);
            }
        };
        loop {
            let every = Duration::from_millis((lease.load(Ordering::Acquire) / 3).max(1));
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = nudge.notified() => {}
            }
            let _renewing = gate.lock().await;
            if stopped.load(Ordering::Acquire) {
                return;
            }
            if let Some(w) = &watch {
                if w.max_hold.is_some_and(|max| granted.elapsed() >= max) {
                    return lose(Lost::MaxHold);
                }
                if w.liveness.lag() > w.max_lag {
                    return lose(Lost::EventLoopStalled);
                }
            }
            let lease_ms = lease.load(Ordering::Acquire);
            let sent = now_ms();
            match renewal.renew(lease_ms).await {
                Ok(None) => {
                    let margin = renewal.margin_ms(lease_ms);
                    confirmed.store(sent + lease_ms.saturating_sub(margin), Ordering::Release);
                    if let Some(w) = &watch {
                        locked(&w.liveness.renewed).push(w.hold);
                    }
                }
                Ok(Some(why)) => return lose(why),
                // Redis slow or away: try again at the next tick while the
                // lease may still run; past it, the lock cannot be vouched for.
                Err(_) => {
                    if now_ms() >= confirmed.load(Ordering::Acquire) {
                        return lose(Lost::RenewalFailed);
                    }
                }
            }
        }
    });
}

fn forget(held: &Held, stopped: &Arc<AtomicBool>) {
    let mut map = running();
    if map
        .get(held)
        .is_some_and(|e| Arc::ptr_eq(&e.stopped, stopped))
    {
        map.remove(held);
    }
}

/// Renews every kept lock `which` picks now rather than at its next tick
/// (something suggests one may have been taken: a Web Locks `steal` was
/// announced), so a loss is told at once; how many it picked (0: none is
/// kept any more).
pub fn nudge_where(which: impl Fn(&Held) -> bool) -> usize {
    let map = running();
    let mut picked = 0;
    for (held, e) in map.iter() {
        if which(held) {
            e.nudge.notify_one();
            picked += 1;
        }
    }
    picked
}

/// Whether any kept lock is one `which` picks.
pub fn any_where(which: impl Fn(&Held) -> bool) -> bool {
    running().keys().any(which)
}

/// How long `held`'s lease is known to run from now, by the last confirmed
/// renewal (or the grant); `None` when it is not kept.
pub fn remaining(held: &Held) -> Option<Duration> {
    let until = running().get(held)?.confirmed_until.load(Ordering::Acquire);
    Some(Duration::from_millis(until.saturating_sub(now_ms())))
}

/// A release (or extend) in progress on a kept lock: renewals wait until it
/// is over.
pub struct Paused {
    held: Held,
    stopped: Arc<AtomicBool>,
    /// Wakes the renewal task so that a stopped one ends now, not at its
    /// next tick (a lease of 30 s leaves it asleep 10 s: at thousands of
    /// releases a second, that was hundreds of MB of sleeping tasks).
    nudge: Arc<tokio::sync::Notify>,
    lease_ms: Arc<AtomicU64>,
    confirmed_until: Arc<AtomicU64>,
    _gate: OwnedMutexGuard<()>,
}

/// Pauses the renewals of `held` (waiting for one in flight) while a
/// release runs; `None` when it is not kept.
pub async fn pause(held: Held) -> Option<Paused> {
    let (gate, stopped, lease_ms, confirmed_until, nudge) = {
        let map = running();
        let e = map.get(&held)?;
        (
            Arc::clone(&e.gate),
            Arc::clone(&e.stopped),
            Arc::clone(&e.lease_ms),
            Arc::clone(&e.confirmed_until),
            Arc::clone(&e.nudge),
        )
    };
    let guard = gate.lock_owned().await;
    Some(Paused {
        held,
        stopped,
        nudge,
        lease_ms,
        confirmed_until,
        _gate: guard,
    })
}

/// Whether no lock is kept at all (a caller may then skip naming one).
pub fn idle() -> bool {
    running().is_empty()
}

impl Paused {
    /// Renewals go on (a reentrant unlock that left holds).
    pub fn resume(self) {}

    /// No more renewals (a release, or an extend that found the lock gone).
    pub fn stop(self) {
        self.stopped.store(true, Ordering::Release);
        forget(&self.held, &self.stopped);
        // The task ends once this pause lets go of the gate.
        self.nudge.notify_one();
    }

    /// An extend to `ms`, confirmed to run until `valid_until`: renewals
    /// keep that lease from now on.
    pub fn extended(self, ms: u64, valid_until: Instant) {
        self.lease_ms.store(ms, Ordering::Release);
        self.confirmed_until
            .store(at_ms(valid_until), Ordering::Release);
    }
}

/// The JavaScript environment of `liveness` is gone (a worker terminated,
/// or the process exiting): its leases are renewed no more, at once and
/// without reports (nobody is left to collect them); their keys expire by
/// their TTL. A lease started for it later is not kept either.
pub fn end(liveness: &Arc<Liveness>) {
    let mut map = running();
    liveness.ended.store(true, Ordering::Release);
    locked(&liveness.lost).clear();
    map.retain(|_, e| {
        if e.liveness
            .as_ref()
            .is_some_and(|l| Arc::ptr_eq(l, liveness))
        {
            e.stopped.store(true, Ordering::Release);
            false
        } else {
            true
        }
    });
}

/// Stops every renewal matching `which` (a force-unlock, a `quit`).
pub fn stop_where(which: impl Fn(&Held) -> bool) {
    let mut map = running();
    map.retain(|held, e| {
        if which(held) {
            e.stopped.store(true, Ordering::Release);
            false
        } else {
            true
        }
    });
}

#[cfg(test)]
mod tests {
    //! What the keeper decides without asking Redis: bounds, reports,
    //! margins, the registry. Renewals against a real server are in
    //! `tests/core.rs`.
    use super::*;
    use crate::locks::{quorum, token};
    use crate::transport::endpoint::{Endpoint, EndpointSpec};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A server nothing is ever sent to (port 1), of its own.
    fn nowhere() -> Arc<SharedConnection> {
        let spec = EndpointSpec {
            url: Some("redis://127.0.0.1:1".into()),
            ..Default::default()
        };
        SharedConnection::dedicated(Endpoint::resolve(spec).unwrap())
    }

    fn held(server: &Arc<SharedConnection>, name: &str) -> Held {
        Held::new(server, name, "owner", token::KEPT)
    }

    fn watch(liveness: &Arc<Liveness>, hold: u32, max_lag: Duration) -> Watch {
        Watch {
            liveness: Arc::clone(liveness),
            hold,
            max_lag,
            max_hold: None,
        }
    }

    /// Starts keeping `h` on `server` with a lease of `lease_ms`, vouched
    /// for `valid` from now.
    fn keep(
        server: &Arc<SharedConnection>,
        h: &Held,
        lease_ms: u64,
        valid: Duration,
        w: Option<Watch>,
    ) {
        let now = Instant::now();
        let one = token::Kept {
            server: Arc::clone(server),
            key: h.name.clone(),
            token: h.owner.clone(),
        };
        start(
            &Handle::current(),
            Box::new(one),
            h.clone(),
            lease_ms,
            now,
            now + valid,
            w,
        );
    }

    /// Waits (up to 5 s) for a loss to be reported.
    async fn reported(l: &Liveness) -> Vec<(u32, Lost)> {
        for _ in 0..500 {
            let lost = l.drain();
            if !lost.is_empty() {
                return lost;
            }
            tokio::time::sleep(ms(10)).await;
        }
        panic!("no loss reported");
    }

    fn near(d: Option<Duration>, want: Duration) -> bool {
        d.is_some_and(|d| d <= want && d + ms(500) >= want)
    }

    /// A renewal that records when the keeper's task lets go of it.
    struct Dropped(Arc<AtomicBool>);

    impl Renewal for Dropped {
        fn renew(
            &self,
            _lease_ms: u64,
        ) -> futures_util::future::BoxFuture<'_, crate::error::Result<Option<Lost>>> {
            Box::pin(async { Ok(None) })
        }
    }

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }

    #[tokio::test]
    async fn a_released_lock_s_renewal_task_ends_at_once_not_at_its_next_tick() {
        let server = nowhere();
        let h = held(&server, "released-task");
        let gone = Arc::new(AtomicBool::new(false));
        let now = Instant::now();
        // A 30 s lease: the next renewal would be 10 s away.
        let renewal = Box::new(Dropped(Arc::clone(&gone)));
        start(
            &Handle::current(),
            renewal,
            h.clone(),
            30_000,
            now,
            now + ms(30_000),
            None,
        );
        tokio::time::sleep(ms(20)).await;
        assert!(!gone.load(Ordering::Acquire));
        pause(h).await.expect("kept").stop();
        for _ in 0..100 {
            if gone.load(Ordering::Acquire) {
                return;
            }
            tokio::time::sleep(ms(10)).await;
        }
        panic!("the stopped renewal task was still asleep a second later");
    }

    #[test]
    fn lag_grows_until_the_next_beat() {
        let l = Liveness::new();
        std::thread::sleep(ms(100));
        let lag = l.lag();
        assert!(lag >= ms(99), "lag {lag:?}");
        l.beat();
        assert!(l.lag() < lag, "a beat resets the lag");
    }

    #[test]
    fn renewals_are_handed_over_once_apart_from_losses() {
        let l = Liveness::new();
        locked(&l.renewed).push(3);
        locked(&l.renewed).push(3);
        l.report(4, Lost::Expired);
        assert_eq!(l.drain_renewals(), vec![3, 3]);
        assert!(l.drain_renewals().is_empty());
        assert_eq!(l.drain(), vec![(4, Lost::Expired)]);
    }

    #[test]
    fn drain_hands_each_loss_over_once() {
        let l = Liveness::new();
        l.report(7, Lost::Expired);
        l.report(8, Lost::Taken);
        assert_eq!(l.drain(), vec![(7, Lost::Expired), (8, Lost::Taken)]);
        assert!(l.drain().is_empty());
    }

    #[test]
    fn only_redlock_renewals_vouch_for_less_than_the_lease() {
        let one = token::Kept {
            server: nowhere(),
            key: "k".into(),
            token: "t".into(),
        };
        assert_eq!(one.margin_ms(10_000), 0);
        let quorum = quorum::Kept {
            servers: Vec::new(),
            within: ms(50),
            key: "k".into(),
            token: "t".into(),
        };
        // Redlock's drift: 1% of the lease plus 2 ms.
        assert_eq!(quorum.margin_ms(10_000), 102);
        assert_eq!(quorum.margin_ms(1), 2);
    }

    #[test]
    fn an_instant_before_the_clock_started_reads_as_its_start() {
        let _ = now_ms();
        let before = BASE.checked_sub(Duration::from_secs(1));
        if let Some(before) = before {
            assert_eq!(at_ms(before), 0);
        }
        assert_eq!(at_ms(*BASE + ms(1500)), 1500);
    }

    #[tokio::test]
    async fn a_stalled_event_loop_ends_the_lease_and_is_reported() {
        let server = nowhere();
        let h = held(&server, "keeper-test:stalled");
        let l = Liveness::new();
        // Renewals every 10 ms; the heartbeat never comes again.
        keep(&server, &h, 30, ms(30), Some(watch(&l, 41, ms(1))));
        assert_eq!(reported(&l).await, vec![(41, Lost::EventLoopStalled)]);
        assert_eq!(remaining(&h), None, "no longer kept");
    }

    #[tokio::test]
    async fn max_hold_ends_the_lease_and_is_reported() {
        let server = nowhere();
        let h = held(&server, "keeper-test:max-hold");
        let l = Liveness::new();
        let w = Watch {
            max_hold: Some(Duration::ZERO),
            ..watch(&l, 42, Duration::from_secs(3600))
        };
        keep(&server, &h, 30, ms(30), Some(w));
        assert_eq!(reported(&l).await, vec![(42, Lost::MaxHold)]);
        assert_eq!(remaining(&h), None);
    }

    #[tokio::test]
    async fn an_ended_environment_keeps_nothing_and_reports_nothing() {
        let server = nowhere();
        let l = Liveness::new();
        let before = held(&server, "keeper-test:end-before");
        keep(
            &server,
            &before,
            60_000,
            ms(60_000),
            Some(watch(&l, 1, ms(60_000))),
        );
        l.report(1, Lost::Taken);
        let other = held(&server, "keeper-test:end-other");
        keep(&server, &other, 60_000, ms(60_000), None);
        assert!(remaining(&before).is_some());

        end(&l);
        assert_eq!(remaining(&before), None);
        assert!(
            l.drain().is_empty(),
            "reports of an ended environment are dropped"
        );
        assert!(remaining(&other).is_some(), "a lease of nobody's is kept");
        // Started after the end: not kept.
        let after = held(&server, "keeper-test:end-after");
        keep(
            &server,
            &after,
            60_000,
            ms(60_000),
            Some(watch(&l, 2, ms(60_000))),
        );
        assert_eq!(remaining(&after), None);
        stop_where(|h| h == &other);
        assert_eq!(remaining(&other), None);
    }

    #[tokio::test]
    async fn remaining_follows_the_grant_then_an_extend() {
        let server = nowhere();
        let h = held(&server, "keeper-test:remaining");
        keep(&server, &h, 60_000, Duration::from_secs(5), None);
        assert!(near(remaining(&h), Duration::from_secs(5)));
        // A second start for a kept lock changes nothing.
        keep(&server, &h, 60_000, Duration::from_secs(50), None);
        assert!(near(remaining(&h), Duration::from_secs(5)));

        let p = pause(h.clone()).await.expect("kept");
        p.extended(90_000, Instant::now() + Duration::from_secs(20));
        assert!(near(remaining(&h), Duration::from_secs(20)));

        pause(h.clone()).await.expect("kept").stop();
        assert_eq!(remaining(&h), None);
        assert!(pause(h.clone()).await.is_none());
    }
}
