//! One shared, self-healing connection per endpoint.
//!
//! Every lock naming the same server, database and credentials uses the same
//! [`SharedConnection`]. It opens a `redis::aio::ConnectionManager` lazily on
//! first use (bounded by the connect timeout). The manager reconnects on its
//! own when the server closes the socket; on top of that, any command that
//! fails at the connection level (I/O error, dropped socket, *timeout*)
//! retires the manager it went through, and the next call opens a fresh one.
//! That also heals what the manager alone does not: a half-open socket (a
//! cable pulled, a firewall dropping packets) where every command would
//! otherwise time out until the OS gives up on the socket, minutes later.
//!
//! Connecting is single-flight: every call that arrives while a connect is in
//! progress awaits that same attempt, and shares its failure, so a dead
//! server costs each caller at most one connect timeout. The attempt runs
//! as its own task, so it finishes even if every caller gave up on it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex, Once, Weak};

use futures_util::future::{BoxFuture, FutureExt, Shared};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

use crate::error::{Error, Result};
use crate::transport::batch::Batcher;
use crate::transport::dialect::Dialect;
use crate::transport::endpoint::Endpoint;
use crate::transport::relay::Relayed;

type Connecting = Shared<BoxFuture<'static, Result<Link>>>;

/// What a connect yields: one server's batched connection manager, or the
/// `redis` crate's cluster connection (which follows MOVED/ASK, resharding
/// and failover itself).
#[derive(Clone)]
enum Link {
    Single(Arc<Batcher>),
    Cluster(redis::cluster_async::ClusterConnection),
    /// Through a client's own methods (transport/relay.rs).
    Relay(Relayed),
}

/// The current connection attempt (or established manager) for one endpoint.
struct Slot {
    /// Bumped each time the current manager is retired.
    generation: u64,
    current: Option<Connecting>,
    /// What to connect to when there is no current manager.
    endpoint: Endpoint,
}

/// The current manager's generation and connect (starting one if none).
fn current(shared: &Arc<Mutex<Slot>>) -> (u64, Connecting) {
    let mut slot = lock_slot(shared);
    let connecting = match &slot.current {
        Some(c) => c.clone(),
        None => {
            let c = connecting(shared, slot.generation, slot.endpoint.clone());
            slot.current = Some(c.clone());
            c
        }
    };
    (slot.generation, connecting)
}

pub struct SharedConnection {
    slot: Arc<Mutex<Slot>>,
    /// What the server can do without Lua (transport/dialect.rs), learned
    /// by the first lock operation on it, whichever engine sent it.
    dialect: Dialect,
}

static REGISTRY: LazyLock<Mutex<HashMap<Endpoint, Weak<SharedConnection>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// rustls needs a process-wide crypto provider; pick ring once. An
/// embedding application that installed its own first keeps it.
pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn lock_slot(slot: &Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    // A poisoned mutex only means another thread panicked while holding it;
    // the slot is two plain fields and always consistent.
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

/// Forgets the manager of `generation` if it is still the current one.
fn retire(slot: &Mutex<Slot>, generation: u64) {
    let mut slot = lock_slot(slot);
    if slot.generation == generation {
        slot.generation = slot.generation.wrapping_add(1);
        slot.current = None;
    }
}

/// An error after which the connection it went through is not trusted again
/// (READONLY: the server was demoted to a replica, e.g. an old primary back
/// after a failover; the next connect asks Sentinel again).
fn breaks_connection(err: &redis::RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
        || err.is_timeout()
        || err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_unrecoverable_error()
}

impl SharedConnection {
    /// The connection for `endpoint`, shared with every other holder of an
    /// equal endpoint. Never blocks on I/O.
    pub fn shared(endpoint: Endpoint) -> Arc<SharedConnection> {
        let mut registry = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = registry.get(&endpoint).and_then(Weak::upgrade) {
            return existing;
        }
        registry.retain(|_, weak| weak.strong_count() > 0);
        let conn = Arc::new(SharedConnection {
            slot: Arc::new(Mutex::new(Slot {
                generation: 0,
                current: None,
                endpoint: endpoint.clone(),
            })),
            dialect: Dialect::new(),
        });
        registry.insert(endpoint, Arc::downgrade(&conn));
        conn
    }

    /// A connection to `endpoint` of its own, shared with nobody (for
    /// commands that block the connection they run on, e.g. `WAIT`).
    pub fn dedicated(endpoint: Endpoint) -> Arc<SharedConnection> {
        Arc::new(SharedConnection {
            slot: Arc::new(Mutex::new(Slot {
                generation: 0,
                current: None,
                endpoint,
            })),
            dialect: Dialect::new(),
        })
    }

    /// What this server can do without Lua (see transport/dialect.rs).
    pub fn dialect(&self) -> &Dialect {
        &self.dialect
    }

    /// A handle on the multiplexed connection; cheap to clone. Connects (or
    /// joins the connect already under way) when there is no live manager.
    pub async fn get(&self) -> Result<Conn> {
        let (generation, connecting) = current(&self.slot);
        // A failed connect has retired itself (see `connecting`): the next
        // call tries again instead of replaying the failure.
        Ok(Conn {
            link: connecting.await?,
            slot: Arc::clone(&self.slot),
            generation,
            broken: false,
        })
    }
}

/// A connect that runs to its end even when every caller stops waiting (a
/// quorum lock bounds each server by a timeout shorter than a connect): on
/// a tokio runtime it is its own task; elsewhere it runs while awaited.
///
/// A connect that fails retires itself the moment it fails: its error is
/// given to those who were waiting for it, never to a caller who comes
/// later. Otherwise a connect begun while a server was down, and abandoned
/// by callers that gave up first, would hand its stale "connection refused"
/// to the first command after the server is back (issue 33: the lease
/// keeper's first refresh after a restart failed on every restarted server,
/// and a Redlock semaphore holder taken after the restart was lost).
fn connecting(slot: &Arc<Mutex<Slot>>, generation: u64, endpoint: Endpoint) -> Connecting {
    let slot = Arc::downgrade(slot);
    let attempt = async move {
        let link = connect(endpoint).await;
        if link.is_err() {
            if let Some(slot) = slot.upgrade() {
                retire(&slot, generation);
            }
        }
        link
    };
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            let task = rt.spawn(attempt);
            async move {
                task.await.unwrap_or_else(|e| {
                    Err(Error::Internal(format!("the connect task failed: {e}")))
                })
            }
            .boxed()
            .shared()
        }
        Err(_) => attempt.boxed().shared(),
    }
}

async fn connect(endpoint: Endpoint) -> Result<Link> {
    if endpoint.tls.is_some() {
        install_crypto_provider();
    }
    if let Some(id) = endpoint.relay {
        return Ok(Link::Relay(Relayed::new(id, endpoint.command_timeout)));
    }
    // One bound for the whole connect, Sentinel's answer included.
    let deadline = tokio::time::Instant::now() + endpoint.connect_timeout;
    if !endpoint.cluster.is_empty() {
        let client = endpoint.cluster_client()?;
        let conn = within(
            &endpoint,
            deadline,
            "Redis Cluster connection",
            client.get_async_connection(),
        )
        .await?;
        return Ok(Link::Cluster(conn));
    }
    let client = match &endpoint.sentinel {
        // Asked again at every connect: after a failover, the new primary.
        Some(spec) => endpoint.sentinel_primary(spec, deadline).await?,
        None => endpoint.client()?,
    };
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(endpoint.connect_timeout))
        .set_response_timeout(Some(endpoint.command_timeout))
        .set_number_of_retries(2)
        .set_min_delay(std::time::Duration::from_millis(50))
        .set_max_delay(std::time::Duration::from_millis(500));
    // The manager retries a refused first connect itself; the deadline
    // bounds the whole thing so a dead server fails fast.
    let connecting = ConnectionManager::new_with_config(client, config);
    let manager = within(&endpoint, deadline, "Redis connection", connecting).await?;
    Ok(Link::Single(Batcher::new(manager)))
}

/// `fut` bounded by `deadline`, its failure worded as a connection error:
/// "`what` to <endpoint> failed: …" / "… timed out after N ms".
async fn within<T, E: std::fmt::Display>(
    endpoint: &Endpoint,
    deadline: tokio::time::Instant,
    what: &str,
    fut: impl Future<Output = std::result::Result<T, E>>,
) -> Result<T> {
    match tokio::time::timeout_at(deadline, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Error::Connection(format!(
            "{what} to {} failed: {e}",
            endpoint.describe()
        ))),
        Err(_) => Err(Error::Connection(format!(
            "{what} to {} timed out after {} ms",
            endpoint.describe(),
            endpoint.connect_timeout.as_millis()
        ))),
    }
}

/// One caller's handle on the shared manager. A command that fails at the
/// connection level retires the manager, so the next [`SharedConnection::get`]
/// connects afresh. After a *timeout*, commands sent through this handle keep
/// using the same socket, in order (an acquire's clean-up release queues
/// behind its `SET`, which may still land); after a *broken* link (I/O error,
/// refused, dropped, READONLY) there is nothing to queue behind, and the
/// handle's next command goes over the current connection — after a Sentinel
/// failover, the new primary's.
pub struct Conn {
    link: Link,
    slot: Arc<Mutex<Slot>>,
    generation: u64,
    /// This handle's link broke: move to the current one before the next command.
    broken: bool,
}

impl Conn {
    /// Which of the shared connection's successive links this handle is on.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn observe<T>(&mut self, result: &RedisResult<T>) {
        if let Err(e) = result {
            if breaks_connection(e) {
                retire(&self.slot, self.generation);
                self.broken = !e.is_timeout();
            }
        }
    }

    /// After a broken link: the current connection (connecting if needed).
    async fn heal(&mut self) -> RedisResult<()> {
        if !self.broken {
            return Ok(());
        }
        let (generation, connecting) = current(&self.slot);
        match connecting.await {
            Ok(link) => {
                self.link = link;
                self.generation = generation;
                self.broken = false;
                Ok(())
            }
            Err(e) => {
                retire(&self.slot, generation);
                Err(redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    e.message().to_string(),
                )))
            }
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        async move {
            self.heal().await?;
            let result = match &self.link {
                Link::Single(b) => b.send(cmd).await,
                Link::Cluster(c) => c.clone().req_packed_command(cmd).await,
                Link::Relay(r) => r.send(cmd).await,
            };
            self.observe(&result);
            result
        }
        .boxed()
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        async move {
            self.heal().await?;
            let result = match &self.link {
                Link::Single(b) => {
                    let mut manager = b.manager().clone();
                    manager.req_packed_commands(pipeline, offset, count).await
                }
                Link::Cluster(c) => c.clone().req_packed_commands(pipeline, offset, count).await,
                Link::Relay(r) => {
                    // One command at a time, in order; the replies wanted.
                    let mut out = Vec::with_capacity(count);
                    let mut failed = None;
                    for (i, cmd) in pipeline.cmd_iter().enumerate() {
                        match r.send(cmd).await {
                            Ok(v) if i >= offset && out.len() < count => out.push(v),
                            Ok(_) => {}
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                    match failed {
                        Some(e) => Err(e),
                        None => Ok(out),
                    }
                }
            };
            self.observe(&result);
            result
        }
        .boxed()
    }

    fn get_db(&self) -> i64 {
        match &self.link {
            Link::Single(b) => b.manager().get_db(),
            Link::Cluster(_) | Link::Relay(_) => 0,
        }
    }
}
