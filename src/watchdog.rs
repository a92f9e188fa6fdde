//! The watchdog: renews the lease of reentrant locks taken without a lease
//! time, from the tokio thread, so a lock survives a JavaScript event loop
//! that is blocked for longer than the lease.
//!
//! One renewal task per held lock (lock name and holder field per server),
//! every `lease / 3` on tokio's monotonic clock. Renewals of many locks that
//! fall due together go out in one write on the server's shared connection
//! (the connection batches what is queued at once). A task stops when its
//! lock is released, force-unlocked, or found no longer ours (then the next
//! `unlock` reports "not locked by current client"). Unlocking first
//! [`pause`]s the task and waits for a renewal in flight, so no renewal
//! command is ever sent after the release. Nothing here keeps Node alive.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::OwnedMutexGuard;

use crate::connection::SharedConnection;
use crate::reentrant::{self, Unlocked};

/// A lock on one server: (server, lock name, holder field).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Held {
    server: usize,
    pub name: String,
    pub field: String,
}

impl Held {
    pub fn new(server: &Arc<SharedConnection>, name: &str, field: &str) -> Held {
        Held {
            server: Arc::as_ptr(server) as usize,
            name: name.to_string(),
            field: field.to_string(),
        }
    }

    /// Whether this is `name` on the same server as `other`.
    pub fn same_lock(&self, server: &Arc<SharedConnection>, name: &str) -> bool {
        self.server == Arc::as_ptr(server) as usize && self.name == name
    }
}

struct Entry {
    /// Held while a renewal is in flight, and by an unlock under way.
    gate: Arc<tokio::sync::Mutex<()>>,
    stopped: Arc<AtomicBool>,
}

static RUNNING: LazyLock<Mutex<HashMap<Held, Entry>>> = LazyLock::new(Mutex::default);

fn running() -> std::sync::MutexGuard<'static, HashMap<Held, Entry>> {
    // Poisoning only means a panic elsewhere; the map stays consistent.
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Renews `held` to `lease_ms` every `lease_ms / 3` until stopped. A second
/// start for a lock already watched does nothing.
pub fn start(rt: &Handle, conn: Arc<SharedConnection>, held: Held, lease_ms: u64) {
    let (gate, stopped) = {
        let mut map = running();
        if map.contains_key(&held) {
            return;
        }
        let entry = Entry {
            gate: Arc::new(tokio::sync::Mutex::new(())),
            stopped: Arc::new(AtomicBool::new(false)),
        };
        let pair = (Arc::clone(&entry.gate), Arc::clone(&entry.stopped));
        map.insert(held.clone(), entry);
        pair
    };
    let every = Duration::from_millis((lease_ms / 3).max(1));
    rt.spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let _renewing = gate.lock().await;
            if stopped.load(Ordering::Acquire) {
                return;
            }
            let renewed = match conn.get().await {
                Ok(mut c) => reentrant::renew(&mut c, &held.name, &held.field, lease_ms).await,
                Err(e) => Err(e),
            };
            // An error (Redis slow or away) is retried at the next tick; the
            // lease left covers two more.
            if let Ok(false) = renewed {
                stopped.store(true, Ordering::Release);
                forget(&held, &stopped);
                return;
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

/// An unlock in progress on a watched lock: renewals wait until it is over.
pub struct Paused {
    held: Held,
    stopped: Arc<AtomicBool>,
    _gate: OwnedMutexGuard<()>,
}

/// Pauses the renewals of `name` held by `field` on `server` (waiting for
/// one in flight) while an unlock runs; `None` when it is not watched.
pub async fn pause(server: &Arc<SharedConnection>, name: &str, field: &str) -> Option<Paused> {
    let (held, gate, stopped) = {
        let map = running();
        // Nothing watched (only fixed leases so far): no key to build.
        if map.is_empty() {
            return None;
        }
        let held = Held::new(server, name, field);
        let e = map.get(&held)?;
        let (gate, stopped) = (Arc::clone(&e.gate), Arc::clone(&e.stopped));
        (held, gate, stopped)
    };
    let guard = gate.lock_owned().await;
    Some(Paused {
        held,
        stopped,
        _gate: guard,
    })
}

impl Paused {
    /// The unlock's outcome: a lock still held keeps its renewals; one
    /// released or not ours any more has none again.
    pub fn finish(self, outcome: Option<Unlocked>) {
        if matches!(outcome, Some(Unlocked::Released | Unlocked::NotHeld)) {
            self.stopped.store(true, Ordering::Release);
            forget(&self.held, &self.stopped);
        }
    }
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
