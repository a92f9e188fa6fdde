//! The tables JavaScript and native share: operations, option bits and the
//! slots of an operation's numbers. Each is a `#[napi]` enum, so the
//! binding exports it as an object (`LockOp.Acquire === 0`) and
//! lib/native/wire.js reads it from there: one table, stated here.

use napi_derive::napi;

/// A token lock's or Redlock's operation (ops/lockx.rs, ops/quorum.rs).
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockOp {
    Acquire = 0,
    Release = 1,
    Extend = 2,
    /// What is known of a key (`inspect()`); the token lock only.
    Inspect = 3,
}

/// A Redisson lock's operation (ops/redisson.rs).
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedissonOp {
    TryLock = 0,
    Unlock = 1,
    ForceUnlock = 2,
    IsLocked = 3,
}

/// An operation of Java Redisson's synchronizers on the Redisson face
/// (ops/synchronizers.rs): `Sem…` RSemaphore, `Pes…`
/// RPermitExpirableSemaphore, `Latch…` RCountDownLatch.
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncOp {
    /// `trySetPermits` (`Time`: RSemaphore's time to live, ms; 0: none).
    SemTrySetPermits = 0,
    /// `tryAcquire`/`acquire` (`WaitMs`).
    SemAcquire = 1,
    SemRelease = 2,
    SemAvailablePermits = 3,
    SemAddPermits = 4,
    SemDrainPermits = 5,
    PesTrySetPermits = 6,
    /// `tryAcquire`/`acquire` of the permit id given (`WaitMs`, `Time`).
    PesAcquire = 7,
    PesTryRelease = 8,
    PesUpdateLease = 9,
    PesAvailablePermits = 10,
    PesAddPermits = 11,
    LatchTrySetCount = 12,
    LatchCountDown = 13,
    LatchGetCount = 14,
    /// `await` (`WaitMs`).
    LatchAwait = 15,
    /// `releaseIfExists` (answers whether the count existed).
    SemReleaseIfExists = 16,
    /// `getPermits`: free plus held.
    PesGetPermits = 17,
    PesAcquiredPermits = 18,
    /// `setPermits`: the total.
    PesSetPermits = 19,
    /// `getLeaseTime` of the permit id given (`No`: not held).
    PesGetLeaseTime = 20,
}

/// A Web Locks operation (ops/weblocks.rs).
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebOp {
    /// `request()`: queued and waited for, or `ifAvailable`, or `steal`
    /// (`Mode`, `How`, `Time` = the lease, the keeper's slots, `Cancel`).
    Request = 0,
    /// The callback settled: give the lock back.
    Release = 1,
    /// `query()`: every name's held and pending requests under the prefix.
    Query = 2,
}

/// The option bits of a token lock's or Redlock's operation
/// (`Slot::Flags`).
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// A fencing token from the key's counter (token lock).
    Fencing = 1,
    /// Waiters wake on release; releases announce themselves.
    Wake = 2,
    /// The lease keeper renews the lease until release.
    Keep = 4,
    /// node-redlock: the report lists every attempt's votes (`rounds`).
    Votes = 8,
    /// redlock 4.2.0: a failed lock attempt is given back on every server
    /// (see `RedlockOptions::give_back_always`).
    GiveBack = 16,
}

impl Flag {
    /// Whether `flags` has this bit.
    pub(crate) fn in_bits(self, flags: u32) -> bool {
        flags & self as u32 != 0
    }
}
