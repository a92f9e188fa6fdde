//! The numbers an operation takes from JavaScript, slot by slot: one
//! layout for every face's operations (a face leaves the slots it does not
//! use at 0), named by [`Slot`], which the binding exports for
//! lib/native/wire.js to fill.

use napi_derive::napi;

use crate::error::{Error, Result};

/// Where each number sits in an operation's numbers. 0 means "none" or
/// "the default" in every slot.
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// An acquire's TTL, an extend's new TTL, a Redlock release's TTL (for
    /// its default server timeout), a Redisson lease (ms).
    Time = 0,
    /// An acquire's retries (-1: until it is free).
    Retries = 1,
    /// The pause between attempts (ms).
    Delay = 2,
    /// The option bits (`Flag`).
    Flags = 3,
    /// JavaScript's id for this hold with the lease keeper (0: none).
    Hold = 4,
    /// The keeper environment (`keeperEnv()`) of the hold and the cancel id.
    Env = 5,
    /// The longest event-loop lag the keeper allows (ms; 0: its default).
    MaxLagMs = 6,
    /// The longest hold the keeper renews (ms; 0: no limit).
    MaxHoldMs = 7,
    /// The id an `AbortSignal` cancels this acquire under (0: none).
    Cancel = 8,
    /// Replicas that must acknowledge the write (0: none).
    Replicas = 9,
    /// How long to wait for them (ms).
    ReplicaTimeoutMs = 10,
    /// Redlock: each server's time to answer (0: `max(50, ttl / 100)`).
    ServerTimeoutMs = 11,
    /// Redlock: the most random time added to a retry's delay (ms).
    JitterMs = 12,
    /// Redisson: how long a `tryLock` waits (-1: forever; 0: one attempt).
    WaitMs = 13,
    /// node-redlock: its `driftFactor` (a fraction of the TTL).
    DriftFactor = 14,
    /// redis-semaphore: a semaphore's `limit` (0: a mutex).
    Limit = 15,
    /// redis-semaphore: a multi-semaphore's `permits` (0: one place).
    Permits = 16,
    /// redis-semaphore: `acquireAttemptsLimit` (-1: no limit).
    Attempts = 17,
    /// Redisson: which hash lock (0 `getLock`, 1 a read lock, 2 a write
    /// lock, 3 a fair lock).
    Flavor = 18,
    /// Redisson: a fair lock waiter's timeout in the queue (ms).
    WaiterTimeoutMs = 19,
    /// Web Locks: the request's mode (0 exclusive, 1 shared).
    Mode = 20,
    /// Web Locks: how it is made (0 queued, 1 `ifAvailable`, 2 `steal`).
    How = 21,
    /// How many slots there are (not a slot).
    Count = 22,
}

/// An operation's numbers, as JavaScript sent them (a `Float64Array`,
/// read in place: an array of numbers costs a conversion per element).
pub(crate) struct Nums([f64; Slot::Count as usize]);

impl Nums {
    /// Checks that `nums` has one number per slot, and copies them.
    pub(crate) fn new(nums: &[f64]) -> Result<Nums> {
        let whole = <[f64; Slot::Count as usize]>::try_from(nums).map_err(|_| {
            Error::InvalidArgument(format!(
                "expected {} numbers, got {}",
                Slot::Count as usize,
                nums.len()
            ))
        })?;
        Ok(Nums(whole))
    }

    /// The number in `slot`.
    pub(crate) fn get(&self, slot: Slot) -> f64 {
        self.0.get(slot as usize).copied().unwrap_or(0.0)
    }
}
