//! The tokio runtime: one current-thread runtime on a dedicated thread, for
//! the tokio engine's operations and for what must not depend on the
//! JavaScript thread (wake-up subscribers, the lease keeper).

use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The runtime the batched operations run on: current-thread, driven by one
/// dedicated thread, so an operation never hops between Tokio workers.
pub(crate) fn runtime() -> Option<&'static tokio::runtime::Handle> {
    static RT: OnceLock<Option<tokio::runtime::Handle>> = OnceLock::new();
    RT.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        let handle = rt.handle().clone();
        std::thread::Builder::new()
            .name("redislock-rs".into())
            .spawn(move || rt.block_on(std::future::pending::<()>()))
            .ok()?;
        Some(handle)
    })
    .as_ref()
}

/// [`runtime`], or the error an operation reports without one.
pub(crate) fn rt() -> Result<&'static tokio::runtime::Handle> {
    runtime().ok_or_else(|| Error::Internal("could not start the Tokio runtime thread".into()))
}
