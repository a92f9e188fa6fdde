//! redislock-rs: distributed locks on Redis.
//!
//! The core knows nothing about JavaScript, one floor above the other (a
//! lower floor never imports a higher one): `transport` reaches Redis,
//! `waiting` is the one wait loop and what ends a pause, `locks` has one
//! file per lock kind, `keeper` renews leases for every kind through its
//! `Renewal`, and `hold` is a held lock's lifecycle, written once; `error`
//! and `limits` are shared by all. `node` is the thin napi surface over it,
//! built with the default `node` feature.

// Every unsafe operation sits in an `unsafe` block of its own, with the
// reason it is sound beside it, also inside unsafe functions.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod error;
pub mod hold;
pub mod keeper;
pub mod limits;
pub mod locks;
pub mod transport;
pub mod waiting;

#[cfg(feature = "node")]
mod node;

/// The addon's own allocations (commands, replies, tasks) go through
/// mimalloc's v2 line: against the system's malloc it saves 1.3–1.9 µs of
/// CPU per lock cycle at 16 and 128 workers (benchmark/NOTES.md §31). Not
/// its v3 line: a Node addon is loaded by worker threads that come and go
/// (ava, Piscina, vitest pools), and mimalloc 3 took the first thread that
/// touched it for the process's main thread, so the next worker that
/// reused its thread id crashed (issue 33). The worker-thread lifecycles
/// are tested in __test__/worker-lifecycles.test.js.
#[cfg(feature = "node")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
