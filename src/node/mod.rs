//! The napi surface: converts JavaScript arguments, calls the core, returns
//! plain values. Errors carry the core's code (`ERR_REDIS_TIMEOUT`, ...) as
//! a `[CODE] ` prefix on the message, which the JavaScript front strips.
//!
//! `RedisConnection` (here) names an endpoint; `Completer` (completer.rs)
//! runs lock operations on it and reports their outcomes in batches.

mod completer;
mod done;
#[cfg_attr(test, allow(dead_code))]
mod lockx;
#[cfg_attr(test, allow(dead_code))]
mod quorum;
#[cfg_attr(test, allow(dead_code))]
mod redisson;
// The napi registrations are what use the JS-thread engine; a `cargo test`
// build of the lib has none.
#[cfg_attr(test, allow(dead_code))]
#[cfg(unix)]
mod jsloop;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::error::Error as CoreError;
use crate::transport::connection::SharedConnection;
use crate::transport::endpoint::{Endpoint, EndpointSpec, TlsSettings};

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
        }
    }
}

/// An endpoint named by some `RedisConnection`, with the tokio engine's
/// shared connection to it and, once a lock waits on it, its wake-up
/// sources (pub/sub, streams, sharded pub/sub: `wakeups::Source`), and
/// whether it takes sharded pub/sub (a Redis Cluster 7+; asked once).
#[cfg_attr(test, allow(dead_code))]
pub(crate) struct Target {
    pub(crate) endpoint: Arc<Endpoint>,
    pub(crate) shared: Arc<SharedConnection>,
    pub(crate) wakeups: [std::sync::OnceLock<Arc<crate::waiting::wakeups::Wakeups>>; 3],
    pub(crate) sharded: std::sync::OnceLock<bool>,
    /// Idle connections of replica-acknowledged operations (see [`Lane`]).
    lanes: Mutex<Vec<Arc<SharedConnection>>>,
}

/// How many idle replica lanes a target keeps (more are made as needed and
/// closed after use).
const IDLE_LANES: usize = 8;

/// A connection of its own for one replica-acknowledged operation: `WAIT`
/// blocks the connection it is sent on (and must follow the write on the
/// same one), so a missing replica would hold up every command queued
/// behind it on the shared connection, and concurrent waits would queue
/// behind each other. Goes back to its target's idle lanes when dropped.
pub(crate) struct Lane {
    target: Arc<Target>,
    conn: Option<Arc<SharedConnection>>,
}

impl Lane {
    pub(crate) fn conn(&self) -> &Arc<SharedConnection> {
        // Some until dropped.
        self.conn.as_ref().unwrap_or(&self.target.shared)
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            let mut idle = self.target.lanes.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < IDLE_LANES {
                idle.push(c);
            }
        }
    }
}

impl Target {
    /// A replica lane (an idle one, or a new connection).
    pub(crate) fn lane(self: &Arc<Self>) -> Lane {
        let idle = self.lanes.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = idle.unwrap_or_else(|| SharedConnection::dedicated((*self.endpoint).clone()));
        Lane {
            target: Arc::clone(self),
            conn: Some(conn),
        }
    }
}

/// Every endpoint named so far, by a small id that JavaScript passes with
/// each operation: the hot path neither unwraps a class nor hashes an
/// endpoint. Equal endpoints get the same id (and so share connections).
/// Entries live as long as the process; there is one per distinct server,
/// database and identity.
#[derive(Default)]
struct Targets {
    by_id: Vec<Arc<Target>>,
    ids: HashMap<Endpoint, u32>,
}

static TARGETS: LazyLock<Mutex<Targets>> = LazyLock::new(Mutex::default);

fn intern(endpoint: Endpoint) -> napi::Result<u32> {
    let mut t = TARGETS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(id) = t.ids.get(&endpoint) {
        return Ok(*id);
    }
    let id =
        u32::try_from(t.by_id.len()).map_err(|_| napi::Error::from_reason("too many endpoints"))?;
    t.by_id.push(Arc::new(Target {
        endpoint: Arc::new(endpoint.clone()),
        shared: SharedConnection::shared(endpoint.clone()),
        wakeups: Default::default(),
        sharded: Default::default(),
        lanes: Mutex::default(),
    }));
    t.ids.insert(endpoint, id);
    Ok(id)
}

/// The endpoint with id `id`, or an error for an id no connection made.
pub(crate) fn target(id: u32) -> crate::error::Result<Arc<Target>> {
    let t = TARGETS.lock().unwrap_or_else(|p| p.into_inner());
    t.by_id
        .get(id as usize)
        .cloned()
        .ok_or_else(|| CoreError::InvalidArgument(format!("unknown endpoint id {id}")))
}

/// Names an endpoint; JavaScript passes its `id` with each operation.
#[napi]
pub struct RedisConnection {
    id: u32,
}

#[napi]
impl RedisConnection {
    #[napi(constructor, catch_unwind)]
    pub fn new(options: ConnectOptions) -> napi::Result<Self> {
        let endpoint = Endpoint::resolve(options.into()).map_err(to_napi)?;
        Ok(RedisConnection {
            id: intern(endpoint)?,
        })
    }

    /// The endpoint's id, for the engines' operation calls.
    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// Stops the watchdog renewals of every lock held under the Redisson
/// instance whose holder fields start with `prefix` (`Redisson.quit()`).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn stop_redisson_renewals(prefix: String) {
    redisson::stop_renewals(&prefix);
}

/// A new JavaScript environment's id for the lease keeper (one per loaded
/// module instance: the main thread, each worker). When the environment is
/// torn down (a worker terminated, the process exiting), its cleanup hook
/// stops its leases and frees its state.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn keeper_env(env: Env) -> napi::Result<u32> {
    let id = lockx::new_env();
    let hook = env.add_env_cleanup_hook(id, |id| {
        // A panic must not unwind into Node's teardown.
        let _ = std::panic::catch_unwind(|| lockx::end_env(id));
    });
    if let Err(e) = hook {
        lockx::end_env(id);
        return Err(e);
    }
    Ok(id)
}

/// The JavaScript thread of `env` is alive: beats its heart and returns the
/// locks it has lost since the last call, flat (hold id, reason code, ...).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn keeper_poll(env: u32) -> napi::Result<Vec<u32>> {
    lockx::poll(env).map_err(to_napi)
}

/// How long the kept lease of `key` (as Redis names it) for `token` is known
/// to run, in ms; -1 when the keeper does not keep it.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn keeper_remaining(endpoint: u32, key: String, token: String) -> napi::Result<f64> {
    let target = target(endpoint).map_err(to_napi)?;
    Ok(lockx::remaining(&target, &key, &token))
}

/// Cancels the acquire registered as `cancel_id` in keeper environment
/// `env` (its `AbortSignal` fired); nothing if it is over.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn lockx_cancel(env: u32, cancel_id: u32) {
    lockx::cancel(env, cancel_id);
}

/// Stops keeping the lease of `key` for `token` without touching Redis (the
/// lock object was garbage-collected while held: the key expires by TTL).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn keeper_drop(endpoint: u32, key: String, token: String) -> napi::Result<()> {
    let target = target(endpoint).map_err(to_napi)?;
    lockx::drop_kept(&target, &key, &token);
    Ok(())
}

/// How an endpoint is named in errors (`host:port/db`, `unix:path/db`).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn endpoint_name(endpoint: u32) -> napi::Result<String> {
    Ok(target(endpoint).map_err(to_napi)?.endpoint.describe())
}
