//! Replica-acknowledged locks (`replicas: N, replicaTimeout`): a grant or
//! an extension counts only once `WAIT N timeout` confirms that N replicas
//! have the write, as Redisson's `checkLockSyncedSlaves` does. Redis
//! replicates asynchronously; without this, a failover right after a grant
//! can promote a replica that never saw the lock.

use std::sync::LazyLock;
use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::transport::lua::Lua;

/// `replicas: N`: the primary's `INFO replication`, run by a script on the
/// lock key so Redis Cluster routes it to the key's primary.
const INFO_REPLICATION: &str = "return redis.call('INFO', 'replication')";
static INFO_REPLICATION_SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(INFO_REPLICATION));

/// How many replicas must acknowledge, and how long to wait for them.
#[derive(Clone, Copy, Debug)]
pub struct Replicas {
    pub count: u32,
    pub timeout: Duration,
}

/// Refuses up front (before any write) a request for more replicas than
/// the server has, or a server that is not a primary. Asked with `INFO
/// replication` inside a script on `key`, so that on Redis Cluster it runs
/// on the primary serving the key's slot (a bare `ROLE` or `INFO` would go
/// to any node; `ROLE` may not run in scripts).
pub async fn check_available<C: ConnectionLike>(
    conn: &mut C,
    want: Replicas,
    key: &str,
) -> Result<()> {
    let info: String = INFO_REPLICATION_SCRIPT
        .eval(conn, (2, key.len() + 8), |cmd| {
            cmd.arg(1).arg(key);
        })
        .await?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    if field("role") != Some("master") {
        return Err(Error::NotReplicated(
            "replicas: the server is not a primary (its role is not master), so no write to it is replicated".into(),
        ));
    }
    let have: u64 = field("connected_slaves")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if have < u64::from(want.count) {
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
