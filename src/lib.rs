//! redislock-rs: distributed locks on Redis.
//!
//! The core (`config`, `connection`, `scripts`, `lock`) knows nothing about
//! JavaScript; `node` is the thin napi surface over it, built with the
//! default `node` feature.

pub mod config;
pub mod connection;
pub mod error;
pub mod lock;
pub mod scripts;

#[cfg(feature = "node")]
mod node;
