//! What Java Redisson's synchronizers share: the publish command and the
//! latch's messages, the safety net of a wait, the wall clock, an object's
//! names, the reply-to-number rule, the counter writes sent once (and the
//! ones that announce themselves), the counter read and the wait.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::Value;

use crate::error::{Error, Result};
use crate::locks::reentrant::Wait;
use crate::locks::resend::query_retrying;
use crate::transport::lua::Lua;
use crate::waiting::retry::{retry, Attempt};
use crate::waiting::timer::{self, Timer};
use crate::waiting::wakeups::Wakeups;

/// What Redisson's `getPublishCommand()` gives on one server, and what
/// this side always passes (classic pub/sub reaches every node of a
/// cluster).
pub const PUBLISH: &str = "publish";

/// CountDownLatchPubSub's messages: the count reached zero / was set anew.
pub const ZERO_COUNT_MESSAGE: &str = "0";
pub const NEW_COUNT_MESSAGE: &str = "1";

/// The longest sleep of a waiter between attempts when nothing else bounds
/// it: a safety net against a lost pub/sub message (Redisson has none).
pub const SAFETY_NET: Duration = Duration::from_millis(1000);

/// The wall clock ([`timer::wall_ms`]: Redisson's
/// `System.currentTimeMillis()`, which permit expiries are written in),
/// signed, as expiries are subtracted from it.
pub fn wall_ms() -> i64 {
    i64::try_from(timer::wall_ms()).unwrap_or(i64::MAX)
}

/// The keys and channel of one object. `timeout` is the permit-expirable
/// semaphore's sorted set (`suffixName(name, "timeout")`; empty for the
/// others).
#[derive(Clone, Copy, Debug)]
pub struct Names<'a> {
    pub name: &'a str,
    pub channel: &'a str,
    pub timeout: &'a str,
}

/// A number from a reply: an integer, or a string holding one (a counter
/// read with `GET` or returned by a script); `Nil` (no key) is 0.
pub(crate) fn number(v: &Value, what: &str) -> Result<i64> {
    let bad = || {
        Error::Redis(format!(
            "Unexpected reply to {what}: {v:?} (is the key a Redisson counter?)"
        ))
    };
    match v {
        Value::Nil => Ok(0),
        Value::Int(n) => Ok(*n),
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .ok_or_else(bad),
        Value::SimpleString(s) => s.trim().parse::<i64>().map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// Runs `lua` once (a write that must not run twice).
pub(crate) async fn once<C: ConnectionLike>(
    conn: &mut C,
    lua: &Lua,
    keys: &[&str],
    args: &[&[u8]],
) -> Result<Value> {
    Ok(lua.run(conn, keys, args).await?)
}

/// `lua` on `[name, channel]` with `[n, 'publish']`, sent once: the shape
/// of the counter writes that announce themselves (release, addPermits,
/// trySetPermits, releaseIfExists).
pub(crate) async fn announced<C: ConnectionLike>(
    conn: &mut C,
    lua: &Lua,
    name: &str,
    channel: &str,
    n: i64,
) -> Result<Value> {
    let n = n.to_string();
    once(
        conn,
        lua,
        &[name, channel],
        &[n.as_bytes(), PUBLISH.as_bytes()],
    )
    .await
}

/// `GET name` as a number (no key: 0), sent again once on a broken
/// connection: RSemaphore's `availablePermits`, RCountDownLatch's
/// `getCount`.
pub async fn get_count<C: ConnectionLike>(conn: &mut C, name: &str) -> Result<i64> {
    let v: Value = query_retrying(conn, redis::cmd("GET").arg(name)).await?;
    number(&v, "GET")
}

/// Runs `one` on `wait`, woken by messages on `channel`: whether it won.
pub(crate) async fn wait_for<A: Attempt>(
    one: &mut A,
    timer: &dyn Timer,
    wakeups: Option<&Arc<Wakeups>>,
    channel: &str,
    wait: Wait,
) -> Result<bool> {
    let wake = wakeups.map(|w| (std::slice::from_ref(w), std::slice::from_ref(&channel)));
    let waited = retry(one, timer, &wait.schedule(timer), &|| 0.0, wake, None).await?;
    Ok(waited.outcome.is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_become_numbers() {
        assert_eq!(number(&Value::Nil, "x").unwrap(), 0);
        assert_eq!(number(&Value::Int(-3), "x").unwrap(), -3);
        assert_eq!(number(&Value::BulkString(b"12".to_vec()), "x").unwrap(), 12);
        assert!(number(&Value::BulkString(b"abc".to_vec()), "x").is_err());
    }

    #[test]
    fn the_wall_clock_is_past_2020() {
        assert!(wall_ms() > 1_577_836_800_000);
    }
}
