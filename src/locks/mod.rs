//! One file per lock kind, each with its scripts and one attempt: `token`
//! (redislock's `SET NX` lock, with fencing and announced releases),
//! `reentrant` (Redisson's hash locks: its wait, unlock and renewal for
//! every flavour), `rwlock` and `fair` (the read-write and fair locks' scripts), `quorum` (Redlock over several
//! servers), `redlock` (node-redlock's several resources over several
//! servers, its scripts), `semaphore` (redis-semaphore's mutexes and
//! counting semaphores, its scripts), `synchronizers` (Java Redisson's
//! RSemaphore, RPermitExpirableSemaphore and RCountDownLatch, its scripts), `weblocks` (the
//! Web Locks API's request queue for a name, fleet-wide: its data and steps); beside them `fanout` (one step on
//! several independent servers, the majority and validity rules), `renewal` (the one
//! trait every kind gives the lease keeper), `replicas` (`WAIT` for replica acknowledgement),
//! `keys` (helper keys in the lock key's hash slot) and `resend` (what a
//! command sent again after a broken connection may conclude).

pub mod fair;
pub mod fanout;
pub mod keys;
pub mod quorum;
pub mod redlock;
pub mod reentrant;
pub mod renewal;
pub mod replicas;
pub(crate) mod resend;
pub mod rwlock;
pub mod semaphore;
pub mod synchronizers;
pub mod token;
pub mod weblocks;
