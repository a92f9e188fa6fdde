//! Java Redisson's synchronizers on its own data layout (Redisson
//! 4.7.1-SNAPSHOT, commit 66863978b4a9; docs/redisson-layout.md): RSemaphore
//! (a counter at the name), RPermitExpirableSemaphore (the counter plus a
//! sorted set of permit ids scored by their expiry in ms since the epoch)
//! and RCountDownLatch (a counter at the name).
//!
//! The scripts are Redisson's, byte for byte (the Java string literals of
//! each operation, concatenated), so EVALSHA hashes match a Java process's;
//! where Redisson passes its publish command as an argument
//! (`redis.call(ARGV[n], KEYS[k], …)`) this side passes `publish`. Each
//! function is one attempt; the waits ([`acquire`],
//! [`acquire_permit`], [`await_zero`]) are `Attempt`s of the one wait loop
//! (`waiting::retry`): subscribe after a first failed attempt, attempt again
//! at once, then sleep until a message on the object's channel, the
//! attempt's hint or the deadline.
//!
//! Writes that are not idempotent (an acquire, a release, a count down) are
//! sent once, as Redisson sends them (`syncedEvalNoRetry`): a broken
//! connection under them is reported, never guessed at. Reads are sent again
//! once. A permit acquire is sent again only after `ZSCORE` shows its id did
//! not land.
//!
//! Written against `ConnectionLike`, a [`Timer`] and [`Wakeups`], so it
//! runs on either engine. One file per synchronizer (`semaphore`,
//! `permits`, `latch`); here what they share: the object's names, the
//! reply-to-number rule, the announced counter write, the wait.

mod common;
mod latch;
mod permits;
mod semaphore;

pub use common::{
    get_count, wall_ms, Names, NEW_COUNT_MESSAGE, PUBLISH, SAFETY_NET, ZERO_COUNT_MESSAGE,
};
pub use latch::*;
pub use permits::*;
pub use semaphore::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::lua::Lua;

    #[test]
    fn scripts_are_redissons_byte_for_byte() {
        // SHA-1 of each Java string literal chain, concatenated (computed
        // from the Java source at 66863978b4a9, not from these constants).
        let want = [
            (SEM_TRY_ACQUIRE, "c7dc9d189c1715465a31a06ddbc008585e0c20be"),
            (SEM_RELEASE, "ae27582488dd01f4e238cc0733a12146d410eb44"),
            (
                SEM_RELEASE_IF_EXISTS,
                "6883802454c09d455e3234c8b01549adf1fb8b4c",
            ),
            (SEM_DRAIN, "c87766d572855e9461c4ecd453db5d1cbab6119e"),
            (
                TRY_SET_PERMITS_TTL,
                "38bf99884eb94708a40a9aabacb15b4c5f16e804",
            ),
            (TRY_SET_PERMITS, "241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c"),
            (SEM_ADD_PERMITS, "98238d408c6755085344670d3a2ddaa55cf177a9"),
            (PES_TRY_ACQUIRE, "992c96b09a3d8ea0b37f5dc12e5347a44d93909d"),
            (PES_TRY_RELEASE, "4ce079451bee2993ce00c8a4e205b536c6ccad67"),
            (PES_AVAILABLE, "26b3972b2c9e617556282f404cb79709d746a713"),
            (PES_GET_PERMITS, "e242db5c1c68811b0d26a41937dcf22415b6d872"),
            (
                PES_ACQUIRED_PERMITS,
                "6f0b0be79a0c146c778cb14f40c10eb5b706e574",
            ),
            (PES_SET_PERMITS, "494d8561fee0cdb033f6c28d74c052c52189a578"),
            (PES_ADD_PERMITS, "ec6fb1cd5f66817424e8fe70fee7929391b7c6f0"),
            (PES_UPDATE_LEASE, "2298b02cc67a89f2a638e47503db3675c73d77f5"),
            (
                PES_GET_LEASE_TIME,
                "8be95cb5221cc7ee883cacb8859a8b32ef501a0e",
            ),
            (LATCH_COUNT_DOWN, "38060fab26b0e7c5982a5cfd7ad542e44d3da19b"),
            (
                LATCH_TRY_SET_COUNT,
                "2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892",
            ),
        ];
        for (body, hash) in want {
            assert_eq!(Lua::new(body).hash(), hash, "{body}");
        }
    }
}
