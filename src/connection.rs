//! One shared, self-healing connection per endpoint.
//!
//! Every lock naming the same server, database and credentials uses the same
//! [`SharedConnection`]. It opens a `redis::aio::ConnectionManager` lazily on
//! first use (bounded by the connect timeout), and the manager reconnects on
//! its own after the server restarts. A failed first connect is retried by
//! the next call.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::OnceCell;

use crate::config::Endpoint;
use crate::error::{Error, Result};

pub struct SharedConnection {
    endpoint: Endpoint,
    manager: OnceCell<ConnectionManager>,
}

static REGISTRY: LazyLock<Mutex<HashMap<Endpoint, Weak<SharedConnection>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

impl SharedConnection {
    /// The connection for `endpoint`, shared with every other holder of an
    /// equal endpoint. Never blocks on I/O.
    pub fn shared(endpoint: Endpoint) -> Arc<SharedConnection> {
        // A poisoned registry only means another thread panicked while
        // holding it; the map itself is still consistent.
        let mut registry = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = registry.get(&endpoint).and_then(Weak::upgrade) {
            return existing;
        }
        registry.retain(|_, weak| weak.strong_count() > 0);
        let conn = Arc::new(SharedConnection { endpoint: endpoint.clone(), manager: OnceCell::new() });
        registry.insert(endpoint, Arc::downgrade(&conn));
        conn
    }

    /// Number of live shared connections (for tests and diagnostics).
    pub fn live_count() -> usize {
        let registry = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        registry.values().filter(|w| w.strong_count() > 0).count()
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// A handle on the multiplexed connection; cheap to clone.
    pub async fn get(&self) -> Result<ConnectionManager> {
        if let Some(manager) = self.manager.get() {
            return Ok(manager.clone());
        }
        let manager = self.manager.get_or_try_init(|| self.connect()).await?;
        Ok(manager.clone())
    }

    async fn connect(&self) -> Result<ConnectionManager> {
        let endpoint = &self.endpoint;
        let client = endpoint.client()?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(endpoint.connect_timeout))
            .set_response_timeout(Some(endpoint.command_timeout))
            .set_number_of_retries(2)
            .set_min_delay(std::time::Duration::from_millis(50))
            .set_max_delay(std::time::Duration::from_millis(500));
        let connecting = ConnectionManager::new_with_config(client, config);
        // The manager retries a refused first connect itself; bound the
        // whole thing so a dead server fails fast.
        match tokio::time::timeout(endpoint.connect_timeout, connecting).await {
            Ok(Ok(manager)) => Ok(manager),
            Ok(Err(e)) => Err(Error::Connection(format!(
                "Redis connection to {} failed: {}",
                endpoint.describe(),
                e
            ))),
            Err(_) => Err(Error::Connection(format!(
                "Redis connection to {} timed out after {} ms",
                endpoint.describe(),
                endpoint.connect_timeout.as_millis()
            ))),
        }
    }
}
