//! `RedisConnection`: names an endpoint from JavaScript's `ConnectOptions`
//! (interned in the target registry); JavaScript passes its id with each
//! operation.

use napi_derive::napi;

use crate::node::targets::intern;
use crate::node::wire::error::to_napi;
use crate::transport::endpoint::{Endpoint, EndpointSpec, TlsSettings};

/// Where to connect. Every field is optional; `url` is applied first and the
/// other fields override it.
#[napi(object)]
pub struct ConnectOptions {
    pub url: Option<String>,
    pub host: Option<String>,
    pub port: Option<u32>,
    /// A Unix socket path, in place of host and port.
    pub path: Option<String>,
    pub db: Option<i64>,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Turns TLS on.
    pub tls: Option<bool>,
    /// PEM CA bundle to trust instead of the built-in roots.
    pub tls_ca: Option<String>,
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    pub tls_servername: Option<String>,
    /// `false` disables certificate verification.
    pub tls_reject_unauthorized: Option<bool>,
    /// Bound on connecting, in ms (default 2000).
    pub connect_timeout: Option<u32>,
    /// Bound on one command's reply, in ms (default 2000).
    pub command_timeout: Option<u32>,
    /// Redis Cluster seed nodes (`host:port` or URLs): the endpoint is the
    /// cluster, served by the tokio engine.
    pub cluster: Option<Vec<String>>,
    /// Sentinels (`host:port`) and the primary's name: the endpoint is
    /// whatever primary they name, served by the tokio engine.
    pub sentinels: Option<Vec<String>>,
    pub sentinel_name: Option<String>,
    pub sentinel_username: Option<String>,
    pub sentinel_password: Option<String>,
    /// A node-redis Sentinel client's primary (`host:port`) when its name is
    /// not known: the name is asked of the sentinels.
    pub sentinel_primary: Option<String>,
    /// A client with no server we can reach (`relayOpen`'s id): commands go
    /// through its own methods, on the tokio engine.
    pub relay: Option<u32>,
}

impl From<ConnectOptions> for EndpointSpec {
    fn from(o: ConnectOptions) -> Self {
        let tls_wanted = o.tls.unwrap_or(false)
            || o.tls_ca.is_some()
            || o.tls_cert.is_some()
            || o.tls_servername.is_some()
            || o.tls_reject_unauthorized.is_some();
        let tls = tls_wanted.then(|| TlsSettings {
            ca: o.tls_ca,
            cert: o.tls_cert,
            key: o.tls_key,
            servername: o.tls_servername,
            reject_unauthorized: o.tls_reject_unauthorized.unwrap_or(true),
        });
        EndpointSpec {
            url: o.url,
            host: o.host,
            port: o.port,
            path: o.path,
            db: o.db,
            username: o.username,
            password: o.password,
            tls,
            connect_timeout_ms: o.connect_timeout,
            command_timeout_ms: o.command_timeout,
            cluster: o.cluster,
            sentinels: o.sentinels,
            sentinel_name: o.sentinel_name,
            sentinel_username: o.sentinel_username,
            sentinel_password: o.sentinel_password,
            sentinel_primary: o.sentinel_primary,
            relay: o.relay,
        }
    }
}

/// Names an endpoint; JavaScript passes its `id` with each operation.
#[napi]
pub struct RedisConnection {
    id: u32,
}

#[napi]
impl RedisConnection {
    #[napi(constructor, catch_unwind)]
    pub fn new(options: ConnectOptions) -> napi::Result<Self, &'static str> {
        let endpoint = Endpoint::resolve(options.into()).map_err(to_napi)?;
        Ok(RedisConnection {
            id: intern(endpoint).map_err(to_napi)?,
        })
    }

    /// The endpoint's id, for the engines' operation calls.
    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.id
    }
}
