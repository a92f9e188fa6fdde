//! The target registry: every endpoint named so far, by the small id
//! JavaScript passes, with the tokio engine's shared connection to it, its
//! wake-up sources and its replica lanes.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::error::Error as CoreError;
use crate::transport::connection::SharedConnection;
use crate::transport::endpoint::Endpoint;

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

pub(crate) fn intern(endpoint: Endpoint) -> crate::error::Result<u32> {
    let mut t = TARGETS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(id) = t.ids.get(&endpoint) {
        return Ok(*id);
    }
    let id = u32::try_from(t.by_id.len())
        .map_err(|_| crate::error::Error::Internal("too many endpoints".into()))?;
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

/// The targets of `endpoints`, in order (a quorum lock's servers).
pub(crate) fn targets(endpoints: &[u32]) -> crate::error::Result<Vec<Arc<Target>>> {
    endpoints.iter().map(|&e| target(e)).collect()
}
