//! The engines that run the operations: `tokio` (a dedicated thread; the
//! fallback, Redis Cluster, lanes) and `jsloop` (the caller's own libuv
//! loop, the request path on Node); `contract` is what both give an
//! operation.

pub(crate) mod contract;
// The napi registrations are what use the JS-thread engine; a `cargo test`
// build of the lib has none.
#[cfg_attr(test, allow(dead_code))]
#[cfg(unix)]
pub(crate) mod jsloop;
pub(crate) mod tokio;
