//! The one trait every lock kind gives the lease keeper (keeper.rs): how a
//! held lock's lease is set again, and how much of it a confirmed renewal
//! vouches for. Each kind implements it beside its scripts (`token`,
//! `reentrant`, `quorum`, `redlock`, `semaphore`); the keeper renews
//! through it and names no lock family, as Redisson's `RedissonBaseLock`
//! owns renewal while each lock kind supplies only its script.

use futures_util::future::BoxFuture;

use crate::error::Result;

/// Why a kept lock was lost (the codes JavaScript maps to
/// `LockLostError.reason`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lost {
    /// The key is gone.
    Expired = 1,
    /// The key carries another owner.
    Taken = 2,
    /// Redis did not confirm a renewal before the lease ran out.
    RenewalFailed = 3,
    /// The hold lasted `max_hold`.
    MaxHold = 4,
    /// The JavaScript thread did not beat within `max_lag`.
    EventLoopStalled = 5,
}

/// How a held lock of one kind is renewed. Implementations carry what they
/// need (the server or servers, the key, the owner, the kind's numbers) and
/// are sent to the keeper's task.
pub trait Renewal: Send + Sync + 'static {
    /// Sets the lease to `lease_ms` again while the lock is still ours:
    /// `Ok(None)` renewed, `Ok(Some(why))` not ours any more, an error when
    /// that is not known yet (the keeper tries again while the lease may
    /// still run).
    fn renew(&self, lease_ms: u64) -> BoxFuture<'_, Result<Option<Lost>>>;

    /// How much less than the lease a confirmed renewal vouches for
    /// (Redlock's drift; nothing on one server).
    fn margin_ms(&self, _lease_ms: u64) -> u64 {
        0
    }
}
