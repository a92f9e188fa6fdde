//! Replica-acknowledged locks (`replicas: N, replicaTimeout`): a grant or
//! an extension counts only once `WAIT N timeout` confirms that N replicas
//! have the write, as Redisson's `checkLockSyncedSlaves` does. Redis
//! replicates asynchronously; without this, a failover right after a grant
//! can promote a replica that never saw the lock.

use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::Value;

use crate::error::{Error, Result};

/// How many replicas must acknowledge, and how long to wait for them.
#[derive(Clone, Copy, Debug)]
pub struct Replicas {
    pub count: u32,
    pub timeout: Duration,
}

/// Refuses up front (before any write) a request for more replicas than
/// the server has, or a server that is not a primary (`ROLE`).
pub async fn check_available<C: ConnectionLike>(conn: &mut C, want: Replicas) -> Result<()> {
    let role: Value = redis::cmd("ROLE").query_async(conn).await?;
    let Value::Array(parts) = role else {
        return Err(Error::Redis(format!("Unexpected reply to ROLE: {role:?}")));
    };
    let is_master = matches!(parts.first(), Some(Value::BulkString(b)) if b == b"master")
        || matches!(parts.first(), Some(Value::SimpleString(s)) if s == "master");
    if !is_master {
        return Err(Error::NotReplicated(
            "replicas: the server is not a primary (ROLE is not master), so no write to it is replicated".into(),
        ));
    }
    let have = match parts.get(2) {
        Some(Value::Array(replicas)) => replicas.len(),
        _ => 0,
    };
    if (have as u64) < u64::from(want.count) {
        return Err(Error::NotReplicated(format!(
            "replicas: {} asked for, but the primary has {have} connected replica{}",
            want.count,
            if have == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

/// `WAIT count timeout`: `Ok(())` when enough replicas acknowledged the
/// writes made so far on this connection, else the shortfall as an error.
pub async fn wait_for<C: ConnectionLike>(conn: &mut C, want: Replicas) -> Result<()> {
    let ms = want.timeout.as_millis() as u64;
    let acked: i64 = redis::cmd("WAIT")
        .arg(want.count)
        .arg(ms)
        .query_async(conn)
        .await?;
    if acked >= i64::from(want.count) {
        return Ok(());
    }
    Err(Error::NotReplicated(format!(
        "replicated to {acked} of {} replicas within {ms} ms",
        want.count
    )))
}
