//! A target's wake-up sources, made on first use on the tokio runtime, and
//! pokes: a release made in this process wakes a waiter here at once.

use std::sync::Arc;

use redis::aio::ConnectionLike;

use crate::error::Result;
use crate::node::runtime::rt;
use crate::node::targets::Target;
use crate::waiting::wakeups::{Source, Wakeups};

/// `target`'s wake-up source from `source`, made on first use.
pub(crate) fn wakeups(target: &Target, source: impl Into<Source>) -> Result<Arc<Wakeups>> {
    let source = source.into();
    let slot = &target.wakeups[source.index()];
    if let Some(w) = slot.get() {
        return Ok(Arc::clone(w));
    }
    let rt = rt()?;
    Ok(Arc::clone(slot.get_or_init(|| {
        Wakeups::new(&target.endpoint, source, rt)
    })))
}

/// Wakes one waiter of this process on `channel` (a release just made here),
/// if any waits: see `Wakeups::poke`.
pub(crate) fn poke(target: &Target, source: impl Into<Source>, channel: &str) {
    if let Some(w) = target.wakeups[source.into().index()].get() {
        w.poke(channel);
    }
}

/// How `wakeOnRelease` announcements travel on `target`: sharded pub/sub
/// on a Redis Cluster that has it (7.0+, asked once with `COMMAND INFO`),
/// else classic pub/sub (on a cluster, a `PUBLISH` reaches every node).
pub(crate) async fn wake_source<C: ConnectionLike>(target: &Target, conn: &mut C) -> Source {
    if target.endpoint.cluster.is_empty() {
        return Source::PubSub;
    }
    let sharded = match target.sharded.get() {
        Some(known) => *known,
        None => {
            let reply: redis::RedisResult<redis::Value> = redis::cmd("COMMAND")
                .arg("INFO")
                .arg("SPUBLISH")
                .query_async(conn)
                .await;
            match reply {
                Ok(redis::Value::Array(items)) => {
                    let has = items.first().is_some_and(|v| *v != redis::Value::Nil);
                    *target.sharded.get_or_init(|| has)
                }
                // Not known this time: classic, and ask again next time.
                _ => false,
            }
        }
    };
    if sharded {
        Source::Sharded
    } else {
        Source::PubSub
    }
}
