//! The lifecycle of a held lock, written once for every kind and face
//! (DESIGN.md: "one lock lifecycle"): [`keep`] hands a granted lock to the
//! lease keeper; [`extend`] pauses its renewals, extends and re-arms them
//! with the new lease (or stops them when the lock is gone); [`release`]
//! pauses them, releases, stops them and wakes this process's waiters. A
//! renewal is never sent after a release: the pause waits for one in
//! flight. Each lock kind supplies only its commands (`locks/`) and its
//! [`Renewal`]; each face only reads its numbers (src/node/ops/).

use std::future::Future;
use std::time::Instant;

use tokio::runtime::Handle;

use crate::error::Result;
use crate::keeper::{self, Held, Renewal, Watch};
use crate::locks::fanout::Report;
use crate::locks::reentrant::Unlocked;

/// Hands a granted lock to the keeper: renewed by `renewal` every lease / 3
/// at `lease_ms`, its lease running from `granted` (when the grant's
/// command was sent) and vouched for until `valid_until` (less for a
/// quorum: Redlock's drift), bounded and reported as `watch` says.
pub fn keep(
    rt: &Handle,
    renewal: impl Renewal,
    held: Held,
    lease_ms: u64,
    granted: Instant,
    valid_until: Instant,
    watch: Watch,
) {
    keeper::start(
        rt,
        Box::new(renewal),
        held,
        lease_ms,
        granted,
        valid_until,
        Some(watch),
    );
}

/// What a release's outcome means for the lock's lifecycle.
pub trait Released: Sized {
    /// Whether its renewals end: by default always (released, not ours, or
    /// not known: a lock whose release failed is not vouched for either).
    fn ends(outcome: &Result<Self>) -> bool {
        let _ = outcome;
        true
    }

    /// It was ours and is free now: this process's waiters may try at once.
    fn freed(&self) -> bool;
}

/// `true`: released.
impl Released for bool {
    fn freed(&self) -> bool {
        *self
    }
}

/// How many servers gave something back (a quorum semaphore's release).
impl Released for usize {
    fn freed(&self) -> bool {
        *self > 0
    }
}

/// A quorum release: granted on a majority.
impl Released for Report {
    fn freed(&self) -> bool {
        self.granted
    }
}

/// A reentrant unlock: one hold fewer keeps the renewals, as does a failed
/// unlock (the holds are still there as far as anyone knows).
impl Released for Unlocked {
    fn ends(outcome: &Result<Self>) -> bool {
        matches!(outcome, Ok(Unlocked::Released | Unlocked::NotHeld))
    }

    fn freed(&self) -> bool {
        *self == Unlocked::Released
    }
}

/// Releases a lock: `kept` names it when the keeper may renew it (its
/// renewals are paused first, waiting for one in flight, and end as
/// [`Released::ends`] says); `wake` runs when it was freed.
pub async fn release<T: Released>(
    kept: Option<Held>,
    release: impl Future<Output = Result<T>>,
    wake: impl FnOnce(),
) -> Result<T> {
    let paused = match &kept {
        Some(held) => keeper::pause(held).await,
        None => None,
    };
    let outcome = release.await;
    if let Some(p) = paused {
        match T::ends(&outcome) {
            true => p.stop(),
            false => p.resume(),
        }
    }
    if outcome.as_ref().is_ok_and(Released::freed) {
        wake();
    }
    outcome
}

/// What an extend's outcome means for the renewals.
pub enum Extension {
    /// Extended to `lease_ms`, vouched for until `until`: renewals keep that lease.
    Confirmed { lease_ms: u64, until: Instant },
    /// The lock is not ours (or cannot be vouched for): renewals end.
    Lost,
    /// Not known: renewals go on as they were.
    Unknown,
}

/// Extends a lock: `kept` names it when the keeper may renew it (paused
/// while `extend` runs, then re-armed or stopped as `judge` says).
pub async fn extend<T>(
    kept: Option<Held>,
    extend: impl Future<Output = Result<T>>,
    judge: impl FnOnce(&Result<T>) -> Extension,
) -> Result<T> {
    let paused = match &kept {
        Some(held) => keeper::pause(held).await,
        None => None,
    };
    let outcome = extend.await;
    if let Some(p) = paused {
        match judge(&outcome) {
            Extension::Confirmed { lease_ms, until } => p.extended(lease_ms, until),
            Extension::Lost => p.stop(),
            Extension::Unknown => p.resume(),
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    //! The lifecycle's decisions, without Redis: the lock is kept on a
    //! server nothing is sent to (its lease is far longer than the test).
    use std::cell::Cell;
    use std::time::Duration;

    use super::*;
    use crate::error::Error;
    use crate::locks::token;
    use crate::transport::connection::SharedConnection;
    use crate::transport::endpoint::{Endpoint, EndpointSpec};

    /// Keeps a lock named `name` (a minute's lease) and returns its name.
    fn kept(name: &str) -> Held {
        let spec = EndpointSpec {
            url: Some("redis://127.0.0.1:1".into()),
            ..Default::default()
        };
        let server = SharedConnection::dedicated(Endpoint::resolve(spec).unwrap());
        let held = Held::new(&server, name, "owner", token::KEPT);
        let renewal = token::Kept {
            server,
            key: name.into(),
            token: "owner".into(),
        };
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        keeper::start(
            &Handle::current(),
            Box::new(renewal),
            held.clone(),
            60_000,
            now,
            now + minute,
            None,
        );
        held
    }

    fn is_kept(held: &Held) -> bool {
        keeper::remaining(held).is_some()
    }

    #[tokio::test]
    async fn a_release_stops_the_renewals_whatever_its_outcome_and_wakes_only_when_freed() {
        for (outcome, wakes) in [(Ok(true), true), (Ok(false), false), (Err(()), false)] {
            let held = kept("hold-test:release");
            let woke = Cell::new(false);
            let outcome = outcome.map_err(|_| Error::Timeout("no answer".into()));
            let got = release(Some(held.clone()), async { outcome }, || woke.set(true)).await;
            assert!(!is_kept(&held), "stopped after {got:?}");
            assert_eq!(woke.get(), wakes, "woken after {got:?}");
        }
    }

    #[tokio::test]
    async fn a_reentrant_unlock_keeps_renewing_a_lock_still_held() {
        let held = kept("hold-test:reentrant");
        let woke = Cell::new(false);
        let still = || async { Ok(Unlocked::Decremented) };
        release(Some(held.clone()), still(), || woke.set(true))
            .await
            .unwrap();
        assert!(is_kept(&held) && !woke.get(), "one hold fewer: still kept");
        let failed = async { Err::<Unlocked, _>(Error::Timeout("no answer".into())) };
        let _ = release(Some(held.clone()), failed, || woke.set(true)).await;
        assert!(
            is_kept(&held),
            "an unlock that failed leaves the holds kept"
        );
        let last = async { Ok(Unlocked::Released) };
        release(Some(held.clone()), last, || woke.set(true))
            .await
            .unwrap();
        assert!(
            !is_kept(&held) && woke.get(),
            "the last hold: stopped and woken"
        );
    }

    #[tokio::test]
    async fn an_extend_rearms_stops_or_leaves_the_renewals_as_judged() {
        let held = kept("hold-test:extend");
        let until = Instant::now() + Duration::from_secs(600);
        let confirmed = |_: &Result<()>| Extension::Confirmed {
            lease_ms: 900_000,
            until,
        };
        extend(Some(held.clone()), async { Ok(()) }, confirmed)
            .await
            .unwrap();
        let left = keeper::remaining(&held).expect("kept");
        assert!(left > Duration::from_secs(500), "re-armed: {left:?}");
        let unknown = |_: &Result<()>| Extension::Unknown;
        extend(Some(held.clone()), async { Ok(()) }, unknown)
            .await
            .unwrap();
        assert!(is_kept(&held));
        let lost = |_: &Result<()>| Extension::Lost;
        extend(Some(held.clone()), async { Ok(()) }, lost)
            .await
            .unwrap();
        assert!(!is_kept(&held));
    }
}
