//! redislock 1.3.0's own operations (a lock made without the options
//! beyond it): `acquire`, `release`, `extend`, on either engine. The hot
//! path: a connection, one script (or, where the server has them, one
//! compare command: transport/dialect.rs), a yes or no.

use crate::error::Result;
use crate::limits;
use crate::locks::token::{self, Grant};
use crate::node::engine::contract::Engine;
use crate::node::options;
use crate::node::targets::target;

/// Takes `key` for `token` (see `token::acquire`): when held, how many
/// attempts it took.
pub(crate) async fn acquire<E: Engine>(
    endpoint: u32,
    key: String,
    token: String,
    ttl: f64,
    retries: f64,
    delay: f64,
) -> Result<Option<u64>> {
    let opts = options::acquire_of(ttl, retries, delay)?;
    let route = E::shared(endpoint)?;
    let mut c = E::connect(&route).await?;
    let server = target(endpoint)?;
    let grant = Grant {
        dialect: Some(server.shared.dialect()),
        ..Grant::default()
    };
    let granted = token::acquire_with(&mut c, E::timer(), &key, &token, &opts, grant);
    Ok(granted.await?.map(|g| g.attempts))
}

/// Deletes `key` if `token` holds it (see `token::release`): `false` when
/// not ours.
pub(crate) async fn release<E: Engine>(endpoint: u32, key: String, token: String) -> Result<bool> {
    let route = E::shared(endpoint)?;
    let mut c = E::connect(&route).await?;
    token::release(&mut c, target(endpoint)?.shared.dialect(), &key, &token).await
}

/// Sets `key`'s TTL to `ms` if `token` holds it (see `token::extend`):
/// `false` when not ours.
pub(crate) async fn extend<E: Engine>(
    endpoint: u32,
    key: String,
    token: String,
    ms: f64,
) -> Result<bool> {
    let ms = limits::extension_from_number(ms)?;
    let route = E::shared(endpoint)?;
    let mut c = E::connect(&route).await?;
    token::extend(&mut c, target(endpoint)?.shared.dialect(), &key, &token, ms).await
}
