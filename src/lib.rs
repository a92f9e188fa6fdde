//! redislock-rs: distributed locks on Redis.
//!
//! The core knows nothing about JavaScript, one floor above the other (a
//! lower floor never imports a higher one): `transport` reaches Redis,
//! `waiting` is the one wait loop and what ends a pause, `locks` has one
//! file per lock kind, and `keeper` renews leases for every kind; `error`
//! and `limits` are shared by all. `node` is the thin napi surface over it,
//! built with the default `node` feature.

// Every unsafe operation sits in an `unsafe` block of its own, with the
// reason it is sound beside it, also inside unsafe functions.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod error;
pub mod keeper;
pub mod limits;
pub mod locks;
pub mod transport;
pub mod waiting;

#[cfg(feature = "node")]
mod node;

// No `#[global_allocator]`: the addon allocates through the system's
// malloc. A Node addon is loaded and unloaded by worker threads that come
// and go (ava, Piscina, vitest pools); mimalloc 3 took the first thread that
// touched it for the process's main thread and crashed the next worker that
// reused its thread id (issue 33, benchmark/NOTES.md §31 for what the
// allocator was worth).
