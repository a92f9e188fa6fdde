//! The napi surface: converts JavaScript arguments, calls the core, returns
//! plain values. Errors carry the core's code (`ERR_REDIS_TIMEOUT`, ...) as
//! a `[CODE] ` prefix on the message, which the JavaScript front strips.
//!
//! `RedisConnection` (here) names an endpoint; `Completer` (completer.rs)
//! runs lock operations on it and reports their outcomes in batches.

mod completer;
mod jsloop;

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::config::{Endpoint, EndpointSpec, TlsSettings};
use crate::connection::SharedConnection;
use crate::error::Error as CoreError;

/// The one place the `[CODE] message` form that JavaScript parses is made.
pub(crate) fn wire_message(err: &CoreError) -> String {
    format!("[{}] {}", err.code(), err.message())
}

fn to_napi(err: CoreError) -> napi::Error {
    napi::Error::new(Status::GenericFailure, wire_message(&err))
}

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
        }
    }
}

/// A handle on the shared connection for one endpoint: the tokio engine's
/// shared connection, and the endpoint the JS-thread engine connects to.
#[napi]
pub struct RedisConnection {
    pub(crate) inner: Arc<SharedConnection>,
    pub(crate) endpoint: Arc<Endpoint>,
}

#[napi]
impl RedisConnection {
    #[napi(constructor, catch_unwind)]
    pub fn new(options: ConnectOptions) -> napi::Result<Self> {
        let endpoint = Endpoint::resolve(options.into()).map_err(to_napi)?;
        Ok(RedisConnection {
            inner: SharedConnection::shared(endpoint.clone()),
            endpoint: Arc::new(endpoint),
        })
    }

    /// Whether the JS-thread engine can serve this endpoint (TLS is served
    /// by the tokio engine for now).
    #[napi(getter)]
    pub fn loopable(&self) -> bool {
        self.endpoint.tls.is_none()
    }
}
