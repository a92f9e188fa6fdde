//! One channel's wake-up state in this process: the generation counter a
//! release bumps (every waiter wakes), the one-waiter permit an
//! `UNLOCK_MESSAGE` hands over on a channel whose waiters take a freed lock
//! one at a time, and the link epoch Redis confirmed the subscription at
//! (see the module note in mod.rs).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::Notify;

pub(super) struct Channel {
    /// Bumped by each release seen on the channel (and by a broken link).
    pub(super) generation: AtomicU64,
    pub(super) notify: Notify,
    /// Wakes one waiter for a release made in this process (see `poke`).
    pub(super) poke: Notify,
    /// The link epoch at which Redis confirmed our subscription (0: never).
    pub(super) confirmed: AtomicU64,
    /// Its waiters take a freed lock one at a time: an `UNLOCK_MESSAGE`
    /// wakes one of them (see the module's note).
    pub(super) one_at_a_time: AtomicBool,
}

/// Redisson's `UNLOCK_MESSAGE`: one lock freed.
const ONE_FREED: &[u8] = b"0";

impl Channel {
    pub(super) fn new(confirmed: u64) -> Channel {
        Channel {
            generation: AtomicU64::new(0),
            notify: Notify::new(),
            poke: Notify::new(),
            confirmed: AtomicU64::new(confirmed),
            one_at_a_time: AtomicBool::new(false),
        }
    }

    /// A message on the channel: wakes one waiter or all (module note).
    pub(super) fn heard(&self, payload: &[u8]) {
        if payload == ONE_FREED && self.one_at_a_time.load(Ordering::Acquire) {
            self.poke.notify_one();
        } else {
            self.bump();
        }
    }

    pub(super) fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.notify.notify_waiters();
    }
}
