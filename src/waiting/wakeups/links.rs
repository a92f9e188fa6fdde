//! A wake-up source's subscriber connection, one per server and source:
//! how it is made for each [`Source`] (a pub/sub connection, the cluster
//! connection's sharded pub/sub, node-redisson's event stream on a
//! connection of its own), its reader (a future the registry runs, which
//! tells a [`Listener`] what it hears), and subscribing and unsubscribing
//! a channel on it. The registry (mod.rs) decides when; this file knows
//! how, and knows nothing of the registry.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use redis::aio::{MultiplexedConnection, PubSubSink};
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, PushKind, Value};

use super::stream::{entry_ids, stream_entries, text, EVENTS_STREAM, READ_BLOCK};
use crate::error::{Error, Result};
use crate::transport::endpoint::Endpoint;

/// Where a [`Wakeups`](super::Wakeups) hears of releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `SUBSCRIBE` to the lock's channel: on one server, or on one node of
    /// a cluster (a `PUBLISH` reaches every node).
    PubSub,
    /// node-redisson's event stream (`XREAD`).
    Streams,
    /// `SSUBSCRIBE` through the cluster connection (Redis Cluster 7+).
    Sharded,
}

impl Source {
    /// 0, 1 or 2: where per-source things sit in arrays.
    pub fn index(self) -> usize {
        match self {
            Source::PubSub => 0,
            Source::Streams => 1,
            Source::Sharded => 2,
        }
    }

    /// The command a release announces itself with, for waiters listening
    /// on this source: `SPUBLISH` for sharded pub/sub, else `PUBLISH`.
    pub fn publish(self) -> &'static str {
        match self {
            Source::Sharded => "SPUBLISH",
            _ => "PUBLISH",
        }
    }
}

/// What a link's reader tells as it hears it.
pub(super) trait Listener: Send + Sync + 'static {
    /// A pub/sub message `payload` on `channel`.
    fn heard(&self, channel: &str, payload: &[u8]);
    /// A release of `channel` (an entry of the event stream).
    fn released(&self, channel: &str);
    /// A cluster node's link dropped: a release may have been missed.
    fn missed(&self);
    /// Nobody waits any more: a stream reader stops (the next waiter
    /// starts a new one).
    fn idle(&self) -> bool;
}

/// A link's reader: ends when its connection does (or, for a stream, when
/// the listener is idle).
pub(super) type Reader = BoxFuture<'static, ()>;

/// The live subscriber connection.
pub(super) enum Link {
    PubSub(PubSubSink),
    /// The stream reader runs as its own task; nothing to send.
    Streams,
    Sharded(ClusterConnection),
}

impl Link {
    /// Subscribes to `name` on this link, confirmed by Redis within
    /// `within` (a stream reader needs nothing: it reads every release).
    pub(super) async fn subscribe(&mut self, name: &str, within: Duration) -> Result<()> {
        let subscribed = match self {
            Link::PubSub(sink) => tokio::time::timeout(within, sink.subscribe(name)).await,
            Link::Sharded(conn) => tokio::time::timeout(within, conn.ssubscribe(name)).await,
            Link::Streams => return Ok(()),
        };
        match subscribed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(Error::Timeout(format!(
                "Redis did not confirm SUBSCRIBE {name} within {} ms",
                within.as_millis()
            ))),
        }
    }

    /// Unsubscribes from `name`; false when Redis did not confirm it within
    /// `within` (the link's state is then unsure).
    pub(super) async fn unsubscribe(&mut self, name: &str, within: Duration) -> bool {
        match self {
            Link::PubSub(sink) => matches!(
                tokio::time::timeout(within, sink.unsubscribe(name)).await,
                Ok(Ok(()))
            ),
            Link::Sharded(conn) => matches!(
                tokio::time::timeout(within, conn.sunsubscribe(name)).await,
                Ok(Ok(()))
            ),
            Link::Streams => true,
        }
    }
}

/// A new link to `endpoint` for `source`, and its reader (not started: the
/// caller runs it, then marks the link broken when it ends).
pub(super) async fn connect(
    endpoint: &Endpoint,
    source: Source,
    listener: Arc<dyn Listener>,
) -> Result<(Link, Reader)> {
    if endpoint.relay.is_some() {
        // Commands through a client's own methods: no subscriber of
        // ours can reach its server, so waiters poll.
        return Err(Error::Connection(
            "a client that commands go through has no subscriber connection".into(),
        ));
    }
    // Behind Sentinel: the primary it names now, as for commands.
    let client = match &endpoint.sentinel {
        Some(spec) => {
            let deadline = tokio::time::Instant::now() + endpoint.connect_timeout;
            endpoint.sentinel_primary(spec, deadline).await?
        }
        None => endpoint.client()?,
    };
    let within = endpoint.connect_timeout;
    let describe = |e: String| {
        Error::Connection(format!(
            "Redis subscriber connection to {} failed: {e}",
            endpoint.describe()
        ))
    };
    Ok(match source {
        Source::Sharded => {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let client = endpoint.cluster_subscriber(tx)?;
            let conn = tokio::time::timeout(within, client.get_async_connection())
                .await
                .map_err(|_| describe("timed out".into()))?
                .map_err(|e| describe(e.to_string()))?;
            let reader = async move {
                // Ends when the connection (which holds the sender) is gone.
                while let Some(push) = rx.recv().await {
                    match push.kind {
                        PushKind::SMessage => {
                            if let Some(name) = push.data.first().and_then(text) {
                                let payload = match push.data.get(1) {
                                    Some(Value::BulkString(b)) => b.as_slice(),
                                    _ => &[],
                                };
                                listener.heard(&name, payload);
                            }
                        }
                        // A node's link dropped: a release may be lost
                        // until the crate has subscribed again.
                        PushKind::Disconnection => listener.missed(),
                        _ => {}
                    }
                }
            };
            (Link::Sharded(conn), reader.boxed())
        }
        Source::PubSub => {
            let pubsub = tokio::time::timeout(within, client.get_async_pubsub())
                .await
                .map_err(|_| describe("timed out".into()))?
                .map_err(|e| describe(e.to_string()))?;
            let (sink, mut stream) = pubsub.split();
            let reader = async move {
                while let Some(msg) = stream.next().await {
                    listener.heard(msg.get_channel_name(), msg.get_payload_bytes());
                }
            };
            (Link::PubSub(sink), reader.boxed())
        }
        Source::Streams => {
            // Its own connection: XREAD BLOCK would hold up the shared one.
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(within))
                .set_response_timeout(Some(READ_BLOCK + endpoint.command_timeout));
            let mut conn = tokio::time::timeout(
                within,
                client.get_multiplexed_async_connection_with_config(&config),
            )
            .await
            .map_err(|_| describe("timed out".into()))?
            .map_err(|e| describe(e.to_string()))?;
            // Read from the newest entry now: every release after this
            // point (and so after any subscription confirmed on this
            // link) is seen.
            let newest: Value = redis::cmd("XREVRANGE")
                .arg(EVENTS_STREAM)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1)
                .query_async(&mut conn)
                .await
                .map_err(|e| describe(e.to_string()))?;
            let from = entry_ids(&newest).pop().unwrap_or_else(|| "0-0".into());
            (Link::Streams, read_stream(conn, from, listener).boxed())
        }
    })
}

/// Follows node-redisson's event stream from `from` until the connection
/// fails or nobody waits any more.
async fn read_stream(
    mut conn: MultiplexedConnection,
    mut from: String,
    listener: Arc<dyn Listener>,
) {
    loop {
        let reply: redis::RedisResult<Value> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(100)
            .arg("BLOCK")
            .arg(READ_BLOCK.as_millis() as u64)
            .arg("STREAMS")
            .arg(EVENTS_STREAM)
            .arg(&from)
            .query_async(&mut conn)
            .await;
        let Ok(reply) = reply else { return };
        for (id, channel) in stream_entries(&reply) {
            listener.released(&channel);
            from = id;
        }
        if listener.idle() {
            return;
        }
    }
}
