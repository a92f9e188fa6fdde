//! The lifecycle of a held lock, written once for every kind and face
//! (DESIGN.md: "one lock lifecycle"): [`keep`] hands a granted lock to the
//! lease keeper; an extend [`pause`]s its renewals and re-arms them with
//! the new lease or stops them when the lock is gone
//! ([`Pause::extended`]); a release pauses them, then stops them and wakes
//! this process's waiters ([`Pause::released`]). A
//! renewal is never sent after a release: the pause waits for one in
//! flight. Each lock kind supplies only its commands (`locks/`) and its
//! [`Renewal`]; each face only reads its numbers (src/node/ops/).

use std::time::Instant;

use tokio::runtime::Handle;

use crate::error::Result;
use crate::keeper::{self, Held, Paused, Renewal, Watch};
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

/// What an extend's outcome means for the renewals.
pub enum Extension {
    /// Extended to `lease_ms`, vouched for until `until`: renewals keep that lease.
    Confirmed { lease_ms: u64, until: Instant },
    /// The lock is not ours (or cannot be vouched for): renewals end.
    Lost,
    /// Not known: renewals go on as they were.
    Unknown,
}

/// A release or an extend in progress on a lock: its renewals, if the
/// keeper keeps it, paused (waiting for one in flight) until the outcome is
/// in. Two halves rather than one function that takes the operation's
/// future: an async fn that owns another future stores it twice (rustc
/// #62958), and the operation futures are moved into a box per call
/// (a redlock operation's grew from 2.8 to 5 KB, 0.6 µs of CPU per cycle at
/// 128 workers: benchmark/NOTES.md §33).
#[must_use = "a pause ends with released() or extended()"]
pub struct Pause(Option<Paused>);

/// Pauses the renewals of `kept` (a lock the keeper may renew; `None`:
/// nothing to pause) before a release or an extend.
pub async fn pause(kept: Option<Held>) -> Pause {
    Pause(match kept {
        Some(held) => keeper::pause(held).await,
        None => None,
    })
}

impl Pause {
    /// The release is over: its renewals end as [`Released::ends`] says,
    /// and `wake` runs when it was freed.
    pub fn released<T: Released>(self, outcome: &Result<T>, wake: impl FnOnce()) {
        if let Some(p) = self.0 {
            match T::ends(outcome) {
                true => p.stop(),
                false => p.resume(),
            }
        }
        if outcome.as_ref().is_ok_and(Released::freed) {
            wake();
        }
    }

    /// The extend is over: its renewals re-armed, stopped or left as `how`
    /// says.
    pub fn extended(self, how: Extension) {
        if let Some(p) = self.0 {
            match how {
                Extension::Confirmed { lease_ms, until } => p.extended(lease_ms, until),
                Extension::Lost => p.stop(),
                Extension::Unknown => p.resume(),
            }
        }
    }
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
        let outcomes: [(Result<bool>, bool); 3] = [
            (Ok(true), true),
            (Ok(false), false),
            (Err(Error::Timeout("no answer".into())), false),
        ];
        for (outcome, wakes) in outcomes {
            let held = kept("hold-test:release");
            let woke = Cell::new(false);
            pause(Some(held.clone()))
                .await
                .released(&outcome, || woke.set(true));
            assert!(!is_kept(&held), "stopped after {outcome:?}");
            assert_eq!(woke.get(), wakes, "woken after {outcome:?}");
        }
    }

    #[tokio::test]
    async fn a_reentrant_unlock_keeps_renewing_a_lock_still_held() {
        let held = kept("hold-test:reentrant");
        let woke = Cell::new(false);
        let still: Result<Unlocked> = Ok(Unlocked::Decremented);
        pause(Some(held.clone()))
            .await
            .released(&still, || woke.set(true));
        assert!(is_kept(&held) && !woke.get(), "one hold fewer: still kept");
        let failed: Result<Unlocked> = Err(Error::Timeout("no answer".into()));
        pause(Some(held.clone()))
            .await
            .released(&failed, || woke.set(true));
        assert!(
            is_kept(&held),
            "an unlock that failed leaves the holds kept"
        );
        let last: Result<Unlocked> = Ok(Unlocked::Released);
        pause(Some(held.clone()))
            .await
            .released(&last, || woke.set(true));
        assert!(
            !is_kept(&held) && woke.get(),
            "the last hold: stopped and woken"
        );
    }

    #[tokio::test]
    async fn an_extend_rearms_stops_or_leaves_the_renewals_as_judged() {
        let held = kept("hold-test:extend");
        let until = Instant::now() + Duration::from_secs(600);
        let confirmed = Extension::Confirmed {
            lease_ms: 900_000,
            until,
        };
        pause(Some(held.clone())).await.extended(confirmed);
        let left = keeper::remaining(&held).expect("kept");
        assert!(left > Duration::from_secs(500), "re-armed: {left:?}");
        pause(Some(held.clone())).await.extended(Extension::Unknown);
        assert!(is_kept(&held));
        pause(Some(held.clone())).await.extended(Extension::Lost);
        assert!(!is_kept(&held));
    }

    #[tokio::test]
    async fn a_lock_not_kept_is_only_woken() {
        let woke = Cell::new(false);
        pause(None).await.released(&Ok(true), || woke.set(true));
        assert!(woke.get());
        pause(None).await.extended(Extension::Lost);
    }
}
