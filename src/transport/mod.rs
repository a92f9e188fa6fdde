//! Reaching Redis and exchanging commands; knows no lock. `endpoint` names
//! a server (URL, options, TLS, Cluster, Sentinel), `sentinel` asks the
//! sentinels for the primary, `connection` is the tokio engine's shared,
//! self-healing connection with `batch` writing its commands in batches,
//! `resp` frames replies for the JS-thread engine, `lua` runs scripts and
//! `dialect` knows whether a server can do without them.

pub(crate) mod batch;
pub mod connection;
pub mod dialect;
pub mod endpoint;
pub mod lua;
pub mod relay;
pub mod resp;
mod sentinel;
