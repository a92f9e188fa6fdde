//! Java Redisson's synchronizers on its own data layout (Redisson
//! 4.7.1-SNAPSHOT, commit 66863978b4a9; docs/redisson-layout.md): RSemaphore
//! (a counter at the name), RPermitExpirableSemaphore (the counter plus a
//! sorted set of permit ids scored by their expiry in ms since the epoch)
//! and RCountDownLatch (a counter at the name).
//!
//! The scripts are Redisson's, byte for byte (the Java string literals of
//! each operation, concatenated), so EVALSHA hashes match a Java process's;
//! where Redisson passes its publish command as an argument
//! (`redis.call(ARGV[n], KEYS[k], …)`) this side passes `publish`. Each
//! function here is one attempt; the waits ([`acquire`],
//! [`acquire_permit`], [`await_zero`]) are `Attempt`s of the one wait loop
//! (`waiting::retry`): subscribe after a first failed attempt, attempt again
//! at once, then sleep until a message on the object's channel, the
//! attempt's hint or the deadline.
//!
//! Writes that are not idempotent (an acquire, a release, a count down) are
//! sent once, as Redisson sends them (`syncedEvalNoRetry`): a broken
//! connection under them is reported, never guessed at. Reads are sent again
//! once. A permit acquire is sent again only after `ZSCORE` shows its id did
//! not land.
//!
//! Written against `ConnectionLike`, a [`Timer`] and [`Wakeups`], so it
//! runs on either engine.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::Value;

use crate::error::{Error, Result};
use crate::locks::reentrant::Wait;
use crate::locks::resend::{eval_retrying, query_retrying};
use crate::transport::lua::Lua;
use crate::waiting::retry::{retry, Attempt};
use crate::waiting::timer::{self, Timer};
use crate::waiting::wakeups::Wakeups;

/// What Redisson's `getPublishCommand()` gives on one server, and what
/// this side always passes (classic pub/sub reaches every node of a
/// cluster).
pub const PUBLISH: &str = "publish";

/// RPermitExpirableSemaphore's `nonExpirableTimeout`: the score of a permit
/// without a lease.
pub const NON_EXPIRABLE: i64 = 922_337_203_685_477;

/// CountDownLatchPubSub's messages: the count reached zero / was set anew.
pub const ZERO_COUNT_MESSAGE: &str = "0";
pub const NEW_COUNT_MESSAGE: &str = "1";

/// The longest sleep of a waiter between attempts when nothing else bounds
/// it: a safety net against a lost pub/sub message (Redisson has none).
pub const SAFETY_NET: Duration = Duration::from_millis(1000);

/// RedissonSemaphore.java (line 267).
pub const SEM_TRY_ACQUIRE: &str = concat!(
    "local value = redis.call('get', KEYS[1]); ",
    "if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then ",
    "local val = redis.call('decrby', KEYS[1], ARGV[1]); ",
    "return 1; ",
    "end; ",
    "return 0;",
);

/// RedissonSemaphore.java (line 459).
pub const SEM_RELEASE: &str = concat!(
    "local value = redis.call('incrby', KEYS[1], ARGV[1]); ",
    "redis.call(ARGV[2], KEYS[2], value); ",
);

/// RedissonSemaphore.java (line 485): `releaseIfExists`.
pub const SEM_RELEASE_IF_EXISTS: &str = concat!(
    "if redis.call('exists', KEYS[1]) == 0 then ",
    "return 0 ",
    "end ",
    "local value = redis.call('incrby', KEYS[1], ARGV[1]) ",
    "redis.call(ARGV[2], KEYS[2], value) ",
    "return 1 ",
);

/// RedissonSemaphore.java (line 509).
pub const SEM_DRAIN: &str = concat!(
    "local value = redis.call('get', KEYS[1]); ",
    "if (value == false) then ",
    "return 0; ",
    "end; ",
    "redis.call('set', KEYS[1], 0); ",
    "return value;",
);

/// RedissonSemaphore.java (line 536).
pub const TRY_SET_PERMITS: &str = concat!(
    "local value = redis.call('get', KEYS[1]); ",
    "if (value == false) then ",
    "redis.call('set', KEYS[1], ARGV[1]); ",
    "redis.call(ARGV[2], KEYS[2], ARGV[1]); ",
    "return 1;",
    "end;",
    "return 0;",
);

/// RedissonSemaphore.java (line 566): `trySetPermits(permits, timeToLive)`.
pub const TRY_SET_PERMITS_TTL: &str = concat!(
    "local value = redis.call('get', KEYS[1]); ",
    "if (value == false) then ",
    "redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3]); ",
    "redis.call(ARGV[2], KEYS[2], ARGV[1]); ",
    "return 1;",
    "end;",
    "return 0;",
);

/// RedissonSemaphore.java (line 596).
pub const SEM_ADD_PERMITS: &str = concat!(
    "local value = redis.call('get', KEYS[1]); ",
    "if (value == false) then ",
    "value = 0;",
    "end;",
    "redis.call('set', KEYS[1], value + ARGV[1]); ",
    "redis.call(ARGV[2], KEYS[2], value + ARGV[1]); ",
);

/// RedissonPermitExpirableSemaphore.java (line 383).
pub const PES_TRY_ACQUIRE: &str = concat!(
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); ",
    "if #expiredIds > 0 then ",
    "redis.call('zrem', KEYS[2], unpack(expiredIds)); ",
    "local value = redis.call('incrby', KEYS[1], #expiredIds); ",
    "if tonumber(value) > 0 then ",
    "redis.call(ARGV[5], KEYS[3], value); ",
    "end;",
    "end; ",
    "local value = redis.call('get', KEYS[1]); ",
    "if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then ",
    "redis.call('decrby', KEYS[1], ARGV[1]); ",
    "for i = 6, #ARGV, 1 do ",
    "redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); ",
    "end; ",
    "local ttl = redis.call('pttl', KEYS[1]); ",
    "if ttl > 0 then ",
    "redis.call('pexpire', KEYS[2], ttl); ",
    "end; ",
    "return 'OK'; ",
    "end; ",
    "local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); ",
    "if v[1] ~= nil and v[2] ~= ARGV[4] then ",
    "return ':' .. tostring(v[2]); ",
    "end ",
    "return nil;",
);

/// RedissonPermitExpirableSemaphore.java (line 619).
pub const PES_TRY_RELEASE: &str = concat!(
    "local expire = redis.call('zscore', KEYS[3], ARGV[1]);",
    "local removed = redis.call('zrem', KEYS[3], ARGV[1]);",
    "if tonumber(removed) ~= 1 then ",
    "return 0;",
    "end;",
    "local value = redis.call('incrby', KEYS[1], ARGV[2]); ",
    "redis.call(ARGV[4], KEYS[2], value); ",
    "if tonumber(expire) <= tonumber(ARGV[3]) then ",
    "return 0;",
    "end;",
    "return 1;",
);

/// RedissonPermitExpirableSemaphore.java (line 756).
pub const PES_AVAILABLE: &str = concat!(
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); ",
    "if #expiredIds > 0 then ",
    "redis.call('zrem', KEYS[2], unpack(expiredIds)); ",
    "local value = redis.call('incrby', KEYS[1], #expiredIds); ",
    "if tonumber(value) > 0 then ",
    "redis.call(ARGV[2], KEYS[3], value); ",
    "end;",
    "return value; ",
    "end; ",
    "local ret = redis.call('get', KEYS[1]); ",
    "return ret == false and 0 or ret;",
);

/// RedissonPermitExpirableSemaphore.java (line 774): `getPermits`.
pub const PES_GET_PERMITS: &str = concat!(
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); ",
    "if #expiredIds > 0 then ",
    "redis.call('zrem', KEYS[2], unpack(expiredIds)); ",
    "local value = redis.call('incrby', KEYS[1], #expiredIds); ",
    "if tonumber(value) > 0 then ",
    "redis.call(ARGV[2], KEYS[3], value); ",
    "end;",
    "end; ",
    "local available = redis.call('get', KEYS[1]); ",
    "if available == false then ",
    "return 0 ",
    "end;",
    "local acquired = redis.call('zcount', KEYS[2], 0, '+inf'); ",
    "if acquired == false then ",
    "return tonumber(available) ",
    "end;",
    "return tonumber(available) + acquired;",
);

/// RedissonPermitExpirableSemaphore.java (line 798): `acquiredPermits`.
pub const PES_ACQUIRED_PERMITS: &str = concat!(
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); ",
    "if #expiredIds > 0 then ",
    "redis.call('zrem', KEYS[2], unpack(expiredIds)); ",
    "local value = redis.call('incrby', KEYS[1], #expiredIds); ",
    "if tonumber(value) > 0 then ",
    "redis.call(ARGV[2], KEYS[3], value); ",
    "end;",
    "end; ",
    "local acquired = redis.call('zcount', KEYS[2], 0, '+inf'); ",
    "return acquired == false and 0 or acquired;",
);

/// RedissonPermitExpirableSemaphore.java (line 825): `setPermits`. Note
/// the keys' order: name, channel, timeout set.
pub const PES_SET_PERMITS: &str = concat!(
    "local available = redis.call('get', KEYS[1]); ",
    "if (available == false) then ",
    "redis.call('set', KEYS[1], ARGV[1]); ",
    "redis.call(ARGV[2], KEYS[2], ARGV[1]); ",
    "return;",
    "end;",
    "local acquired = redis.call('zcount', KEYS[3], 0, '+inf'); ",
    "local maximum = (acquired == false and 0 or acquired) + tonumber(available); ",
    "if (maximum == tonumber(ARGV[1])) then ",
    "return;",
    "end;",
    "redis.call('incrby', KEYS[1], tonumber(ARGV[1]) - maximum); ",
    "redis.call(ARGV[2], KEYS[2], ARGV[1]);",
);

/// RedissonPermitExpirableSemaphore.java (line 864).
pub const PES_ADD_PERMITS: &str = concat!(
    "local value = redis.call('get', KEYS[1]); ",
    "if (value == false) then ",
    "value = 0;",
    "end;",
    "redis.call('set', KEYS[1], tonumber(value) + tonumber(ARGV[1])); ",
    "if tonumber(ARGV[1]) > 0 then ",
    "redis.call(ARGV[2], KEYS[2], ARGV[1]); ",
    "end;",
);

/// RedissonPermitExpirableSemaphore.java (line 880).
pub const PES_UPDATE_LEASE: &str = concat!(
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1); ",
    "if #expiredIds > 0 then ",
    "redis.call('zrem', KEYS[2], unpack(expiredIds)); ",
    "local value = redis.call('incrby', KEYS[1], #expiredIds); ",
    "if tonumber(value) > 0 then ",
    "redis.call(ARGV[4], KEYS[3], value); ",
    "end;",
    "end; ",
    "local value = redis.call('zscore', KEYS[2], ARGV[1]); ",
    "if (value ~= false) then ",
    "redis.call('zadd', KEYS[2], ARGV[2], ARGV[1]); ",
    "return 1;",
    "end;",
    "return 0;",
);

/// RedissonPermitExpirableSemaphore.java (line 908): `getLeaseTime`.
pub const PES_GET_LEASE_TIME: &str = concat!(
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1); ",
    "if #expiredIds > 0 then ",
    "redis.call('zrem', KEYS[2], unpack(expiredIds)); ",
    "local value = redis.call('incrby', KEYS[1], #expiredIds); ",
    "if tonumber(value) > 0 then ",
    "redis.call(ARGV[4], KEYS[3], value); ",
    "end;",
    "end; ",
    "local value = redis.call('zscore', KEYS[2], ARGV[1]); ",
    "if (value ~= false) then ",
    "return tonumber(value) == tonumber(ARGV[2]) and -1 or tonumber(value) - tonumber(ARGV[3]);",
    "end;",
    "return 0;",
);

/// RedissonCountDownLatch.java (line 255).
pub const LATCH_COUNT_DOWN: &str = concat!(
    "local v = redis.call('decr', KEYS[1]);",
    "if v <= 0 then redis.call('del', KEYS[1]) end;",
    "if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;",
);

/// RedissonCountDownLatch.java (line 288).
pub const LATCH_TRY_SET_COUNT: &str = concat!(
    "if redis.call('exists', KEYS[1]) == 0 then ",
    "redis.call('set', KEYS[1], ARGV[2]); ",
    "redis.call(ARGV[3], KEYS[2], ARGV[1]); ",
    "return 1 ",
    "else ",
    "return 0 ",
    "end",
);

struct Scripts {
    sem_try_acquire: Lua,
    sem_release: Lua,
    sem_release_if_exists: Lua,
    sem_drain: Lua,
    try_set_permits: Lua,
    try_set_permits_ttl: Lua,
    sem_add_permits: Lua,
    pes_try_acquire: Lua,
    pes_try_release: Lua,
    pes_available: Lua,
    pes_get_permits: Lua,
    pes_acquired_permits: Lua,
    pes_set_permits: Lua,
    pes_add_permits: Lua,
    pes_update_lease: Lua,
    pes_get_lease_time: Lua,
    latch_count_down: Lua,
    latch_try_set_count: Lua,
}

fn scripts() -> &'static Scripts {
    static S: OnceLock<Scripts> = OnceLock::new();
    S.get_or_init(|| Scripts {
        sem_try_acquire: Lua::new(SEM_TRY_ACQUIRE),
        sem_release: Lua::new(SEM_RELEASE),
        sem_release_if_exists: Lua::new(SEM_RELEASE_IF_EXISTS),
        sem_drain: Lua::new(SEM_DRAIN),
        try_set_permits: Lua::new(TRY_SET_PERMITS),
        try_set_permits_ttl: Lua::new(TRY_SET_PERMITS_TTL),
        sem_add_permits: Lua::new(SEM_ADD_PERMITS),
        pes_try_acquire: Lua::new(PES_TRY_ACQUIRE),
        pes_try_release: Lua::new(PES_TRY_RELEASE),
        pes_available: Lua::new(PES_AVAILABLE),
        pes_get_permits: Lua::new(PES_GET_PERMITS),
        pes_acquired_permits: Lua::new(PES_ACQUIRED_PERMITS),
        pes_set_permits: Lua::new(PES_SET_PERMITS),
        pes_add_permits: Lua::new(PES_ADD_PERMITS),
        pes_update_lease: Lua::new(PES_UPDATE_LEASE),
        pes_get_lease_time: Lua::new(PES_GET_LEASE_TIME),
        latch_count_down: Lua::new(LATCH_COUNT_DOWN),
        latch_try_set_count: Lua::new(LATCH_TRY_SET_COUNT),
    })
}

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
fn number(v: &Value, what: &str) -> Result<i64> {
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
async fn once<C: ConnectionLike>(
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
async fn announced<C: ConnectionLike>(
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

/// A permit-expirable semaphore's count `lua` at wall time `now` (expired
/// permits counted back first), sent again once on a broken connection.
async fn permits_at<C: ConnectionLike>(
    conn: &mut C,
    lua: &Lua,
    names: Names<'_>,
    now: i64,
    what: &str,
) -> Result<i64> {
    let now = now.to_string();
    let keys = [names.name, names.timeout, names.channel];
    let v = eval_retrying(conn, lua, &keys, &[now.as_bytes(), PUBLISH.as_bytes()]).await?;
    number(&v, what)
}

/// `GET name` as a number (no key: 0), sent again once on a broken
/// connection: RSemaphore's `availablePermits`, RCountDownLatch's
/// `getCount`.
pub async fn get_count<C: ConnectionLike>(conn: &mut C, name: &str) -> Result<i64> {
    let v: Value = query_retrying(conn, redis::cmd("GET").arg(name)).await?;
    number(&v, "GET")
}

/// `trySetPermits` (RSemaphore's and RPermitExpirableSemaphore's script is
/// the same): sets the count if there is none, and announces it. `true`
/// when set. With `ttl` (RSemaphore's `trySetPermits(permits,
/// timeToLive)`, at least 1 ms) Java's other script sets the count with
/// `PX`.
pub async fn try_set_permits<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    channel: &str,
    permits: i64,
    ttl: Option<Duration>,
) -> Result<bool> {
    let v = match ttl {
        None => announced(conn, &scripts().try_set_permits, name, channel, permits).await?,
        Some(ttl) => {
            let p = permits.to_string();
            if ttl.as_millis() == 0 {
                return Err(Error::InvalidArgument(
                    "Invalid ttl 0: expected a positive integer number of milliseconds".into(),
                ));
            }
            let ms = ttl.as_millis().to_string();
            once(
                conn,
                &scripts().try_set_permits_ttl,
                &[name, channel],
                &[p.as_bytes(), PUBLISH.as_bytes(), ms.as_bytes()],
            )
            .await?
        }
    };
    Ok(number(&v, "trySetPermits")? == 1)
}

/// RSemaphore's `tryAcquire(permits)`: one attempt. `true` when taken.
pub async fn try_acquire<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    permits: i64,
) -> Result<bool> {
    let p = permits.to_string();
    let v = once(conn, &scripts().sem_try_acquire, &[name], &[p.as_bytes()]).await?;
    Ok(number(&v, "tryAcquire")? == 1)
}

/// RSemaphore's `release(permits)`: adds them and publishes the new count.
pub async fn release<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    channel: &str,
    permits: i64,
) -> Result<()> {
    announced(conn, &scripts().sem_release, name, channel, permits).await?;
    Ok(())
}

/// RSemaphore's `releaseIfExists(permits)`: adds them and publishes the new
/// count only if the count exists. `true` when released.
pub async fn release_if_exists<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    channel: &str,
    permits: i64,
) -> Result<bool> {
    let v = announced(
        conn,
        &scripts().sem_release_if_exists,
        name,
        channel,
        permits,
    )
    .await?;
    Ok(number(&v, "releaseIfExists")? == 1)
}

/// RSemaphore's `addPermits(permits)` (may be negative): sets the count to
/// count + permits and publishes it.
pub async fn add_permits<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    channel: &str,
    permits: i64,
) -> Result<()> {
    announced(conn, &scripts().sem_add_permits, name, channel, permits).await?;
    Ok(())
}

/// RSemaphore's `drainPermits`: sets the count to 0; the count it had.
pub async fn drain_permits<C: ConnectionLike>(conn: &mut C, name: &str) -> Result<i64> {
    let v = once(conn, &scripts().sem_drain, &[name], &[]).await?;
    number(&v, "drainPermits")
}

/// What one permit acquire found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermitAttempt {
    Granted,
    /// Not enough permits; the earliest expiry of a permit with a lease (ms
    /// since the epoch), if there is one.
    Busy(Option<i64>),
}

/// RPermitExpirableSemaphore's acquire of one permit `id` (16 raw bytes)
/// expiring at `timeout_date` (ms since the epoch; [`NON_EXPIRABLE`]: no
/// lease), at wall time `now`: one attempt. Expired permits go back to the
/// count first (and that is announced).
pub async fn try_acquire_permit<C: ConnectionLike>(
    conn: &mut C,
    names: Names<'_>,
    id: &[u8],
    timeout_date: i64,
    now: i64,
) -> Result<PermitAttempt> {
    let (date, now, never) = (
        timeout_date.to_string(),
        now.to_string(),
        NON_EXPIRABLE.to_string(),
    );
    let keys = [names.name, names.timeout, names.channel];
    let args: [&[u8]; 6] = [
        b"1",
        date.as_bytes(),
        now.as_bytes(),
        never.as_bytes(),
        PUBLISH.as_bytes(),
        id,
    ];
    let lua = &scripts().pes_try_acquire;
    let v = match lua.run(conn, &keys, &args).await.map_err(Error::from) {
        // The first try may have landed: its id would be in the set.
        Err(Error::Connection(_)) => {
            let score: Option<f64> = redis::cmd("ZSCORE")
                .arg(names.timeout)
                .arg(id)
                .query_async(conn)
                .await?;
            if score.is_some() {
                return Ok(PermitAttempt::Granted);
            }
            lua.run(conn, &keys, &args).await?
        }
        other => other?,
    };
    let text = match &v {
        Value::Nil => return Ok(PermitAttempt::Busy(None)),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => s.clone(),
        Value::Okay => return Ok(PermitAttempt::Granted),
        other => {
            return Err(Error::Redis(format!(
                "Unexpected reply to the permit acquire script: {other:?}"
            )))
        }
    };
    if text == "OK" {
        return Ok(PermitAttempt::Granted);
    }
    match text.strip_prefix(':').and_then(|s| s.parse::<f64>().ok()) {
        Some(ms) if ms.is_finite() => Ok(PermitAttempt::Busy(Some(ms as i64))),
        _ => Err(Error::Redis(format!(
            "Unexpected reply to the permit acquire script: {text:?}"
        ))),
    }
}

/// RPermitExpirableSemaphore's `tryRelease(id)` at wall time `now`: `true`
/// when the permit was held and had not expired (an expired one is still
/// removed and counted back, as Redisson does, but answers `false`).
pub async fn try_release_permit<C: ConnectionLike>(
    conn: &mut C,
    names: Names<'_>,
    id: &[u8],
    now: i64,
) -> Result<bool> {
    let now = now.to_string();
    let v = once(
        conn,
        &scripts().pes_try_release,
        &[names.name, names.channel, names.timeout],
        &[id, b"1", now.as_bytes(), PUBLISH.as_bytes()],
    )
    .await?;
    Ok(number(&v, "tryRelease")? == 1)
}

/// RPermitExpirableSemaphore's `availablePermits` at wall time `now`
/// (expired permits are counted back first).
pub async fn available_permits<C: ConnectionLike>(
    conn: &mut C,
    names: Names<'_>,
    now: i64,
) -> Result<i64> {
    permits_at(
        conn,
        &scripts().pes_available,
        names,
        now,
        "availablePermits",
    )
    .await
}

/// RPermitExpirableSemaphore's `getPermits` at wall time `now`: free plus
/// held (expired permits are counted back first; no count: 0).
pub async fn get_permits<C: ConnectionLike>(
    conn: &mut C,
    names: Names<'_>,
    now: i64,
) -> Result<i64> {
    permits_at(conn, &scripts().pes_get_permits, names, now, "getPermits").await
}

/// RPermitExpirableSemaphore's `acquiredPermits` at wall time `now`: the
/// permits held (expired permits are counted back first).
pub async fn acquired_permits<C: ConnectionLike>(
    conn: &mut C,
    names: Names<'_>,
    now: i64,
) -> Result<i64> {
    permits_at(
        conn,
        &scripts().pes_acquired_permits,
        names,
        now,
        "acquiredPermits",
    )
    .await
}

/// RPermitExpirableSemaphore's `setPermits(permits)`: the total (free plus
/// held) becomes `permits`, the free count moving by the difference; a
/// change is announced. Sent again once on a broken connection (running
/// it twice changes nothing more).
pub async fn set_permits<C: ConnectionLike>(
    conn: &mut C,
    names: Names<'_>,
    permits: i64,
) -> Result<()> {
    let p = permits.to_string();
    eval_retrying(
        conn,
        &scripts().pes_set_permits,
        &[names.name, names.channel, names.timeout],
        &[p.as_bytes(), PUBLISH.as_bytes()],
    )
    .await?;
    Ok(())
}

/// RPermitExpirableSemaphore's `getLeaseTime(id)` at wall time `now`: the
/// ms left of permit `id`'s lease (-1: no lease), or `None` when it is not
/// held (released, expired, never taken).
pub async fn lease_time<C: ConnectionLike>(
    conn: &mut C,
    names: Names<'_>,
    id: &[u8],
    now: i64,
) -> Result<Option<i64>> {
    let (never, now) = (NON_EXPIRABLE.to_string(), now.to_string());
    let v = eval_retrying(
        conn,
        &scripts().pes_get_lease_time,
        &[names.name, names.timeout, names.channel],
        &[id, never.as_bytes(), now.as_bytes(), PUBLISH.as_bytes()],
    )
    .await?;
    Ok(match number(&v, "getLeaseTime")? {
        0 => None,
        ms => Some(ms),
    })
}

/// RPermitExpirableSemaphore's `addPermits(permits)` (may be negative;
/// announced when positive).
pub async fn add_expirable_permits<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    channel: &str,
    permits: i64,
) -> Result<()> {
    announced(conn, &scripts().pes_add_permits, name, channel, permits).await?;
    Ok(())
}

/// RPermitExpirableSemaphore's `updateLeaseTime(id, …)`: the permit now
/// expires at `timeout_date`. `false` when it is not held (released, or
/// expired by `now`).
pub async fn update_lease<C: ConnectionLike>(
    conn: &mut C,
    names: Names<'_>,
    id: &[u8],
    timeout_date: i64,
    now: i64,
) -> Result<bool> {
    let (date, now) = (timeout_date.to_string(), now.to_string());
    let v = eval_retrying(
        conn,
        &scripts().pes_update_lease,
        &[names.name, names.timeout, names.channel],
        &[id, date.as_bytes(), now.as_bytes(), PUBLISH.as_bytes()],
    )
    .await?;
    Ok(number(&v, "updateLeaseTime")? == 1)
}

/// RCountDownLatch's `trySetCount(count)`: sets it if there is no count,
/// announcing NEW_COUNT. `true` when set.
pub async fn try_set_count<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    channel: &str,
    count: i64,
) -> Result<bool> {
    let c = count.to_string();
    let v = once(
        conn,
        &scripts().latch_try_set_count,
        &[name, channel],
        &[
            NEW_COUNT_MESSAGE.as_bytes(),
            c.as_bytes(),
            PUBLISH.as_bytes(),
        ],
    )
    .await?;
    Ok(number(&v, "trySetCount")? == 1)
}

/// RCountDownLatch's `countDown`: one fewer; at zero the key is deleted and
/// ZERO_COUNT announced.
pub async fn count_down<C: ConnectionLike>(conn: &mut C, name: &str, channel: &str) -> Result<()> {
    once(
        conn,
        &scripts().latch_count_down,
        &[name, channel],
        &[ZERO_COUNT_MESSAGE.as_bytes(), PUBLISH.as_bytes()],
    )
    .await?;
    Ok(())
}

/// Runs `one` on `wait`, woken by messages on `channel`: whether it won.
async fn wait_for<A: Attempt>(
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

/// RSemaphore's `tryAcquire(permits, waitTime)` / `acquire(permits)`:
/// attempts until `permits` are taken or the wait is over, woken by a
/// release announced on `channel`. `true` when taken.
pub async fn acquire<C: ConnectionLike>(
    conn: &mut C,
    timer: &dyn Timer,
    wakeups: Option<&Arc<Wakeups>>,
    names: Names<'_>,
    permits: i64,
    wait: Wait,
) -> Result<bool> {
    let mut one = TakePermits {
        conn,
        name: names.name,
        permits,
    };
    wait_for(&mut one, timer, wakeups, names.channel, wait).await
}

struct TakePermits<'a, C> {
    conn: &'a mut C,
    name: &'a str,
    permits: i64,
}

impl<C: ConnectionLike> Attempt for TakePermits<'_, C> {
    type Won = ();
    type Lost = ();

    async fn attempt(&mut self) -> Result<std::result::Result<(), ()>> {
        let taken = try_acquire(self.conn, self.name, self.permits).await?;
        Ok(if taken { Ok(()) } else { Err(()) })
    }

    fn retry_within(_: &()) -> Option<Duration> {
        Some(SAFETY_NET)
    }
}

/// RPermitExpirableSemaphore's `tryAcquire(waitTime, leaseTime)` /
/// `acquire(leaseTime)` for permit `id`: attempts until it is granted or the
/// wait is over. Each attempt reckons the expiry from the wall clock at
/// that moment (`lease`: none, non-expiring). A waiter sleeps at most until
/// the earliest permit's expiry (then the next attempt counts it back), a
/// message on the channel, [`SAFETY_NET`] or the deadline.
#[allow(clippy::too_many_arguments)]
pub async fn acquire_permit<C: ConnectionLike>(
    conn: &mut C,
    timer: &dyn Timer,
    wakeups: Option<&Arc<Wakeups>>,
    names: Names<'_>,
    id: &[u8],
    lease: Option<Duration>,
    wait: Wait,
) -> Result<bool> {
    let mut one = TakePermit {
        conn,
        names,
        id,
        lease_ms: lease.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
    };
    wait_for(&mut one, timer, wakeups, names.channel, wait).await
}

struct TakePermit<'a, C> {
    conn: &'a mut C,
    names: Names<'a>,
    id: &'a [u8],
    lease_ms: Option<i64>,
}

impl<C: ConnectionLike> Attempt for TakePermit<'_, C> {
    type Won = ();
    /// How long until the earliest expiry, at most [`SAFETY_NET`].
    type Lost = Duration;

    async fn attempt(&mut self) -> Result<std::result::Result<(), Duration>> {
        let now = wall_ms();
        let date = match self.lease_ms {
            Some(ms) => now.saturating_add(ms),
            None => NON_EXPIRABLE,
        };
        let got = try_acquire_permit(self.conn, self.names, self.id, date, now).await?;
        Ok(match got {
            PermitAttempt::Granted => Ok(()),
            PermitAttempt::Busy(earliest) => Err(until_expiry(earliest, wall_ms())),
        })
    }

    fn retry_within(rest: &Duration) -> Option<Duration> {
        Some(*rest)
    }
}

/// The sleep before the next permit attempt when the earliest lease ends at
/// `earliest` (ms since the epoch) and it is `now`: until just after then
/// (the script counts a permit back once its score is ≤ the time), at most
/// [`SAFETY_NET`], at least 1 ms.
fn until_expiry(earliest: Option<i64>, now: i64) -> Duration {
    match earliest {
        Some(at) => {
            let ms = at.saturating_sub(now).saturating_add(1).clamp(1, 1000);
            Duration::from_millis(ms as u64).min(SAFETY_NET)
        }
        None => SAFETY_NET,
    }
}

/// RCountDownLatch's `await(waitTime)`: reads the count until it is zero
/// (or gone) or the wait is over, woken by messages on `channel`. `true` at
/// zero.
pub async fn await_zero<C: ConnectionLike>(
    conn: &mut C,
    timer: &dyn Timer,
    wakeups: Option<&Arc<Wakeups>>,
    names: Names<'_>,
    wait: Wait,
) -> Result<bool> {
    let mut one = ReadCount {
        conn,
        name: names.name,
    };
    wait_for(&mut one, timer, wakeups, names.channel, wait).await
}

struct ReadCount<'a, C> {
    conn: &'a mut C,
    name: &'a str,
}

impl<C: ConnectionLike> Attempt for ReadCount<'_, C> {
    type Won = ();
    type Lost = ();

    async fn attempt(&mut self) -> Result<std::result::Result<(), ()>> {
        Ok(match get_count(self.conn, self.name).await? {
            n if n <= 0 => Ok(()),
            _ => Err(()),
        })
    }

    fn retry_within(_: &()) -> Option<Duration> {
        Some(SAFETY_NET)
    }
}

/// A permit id: 32 hexadecimal digits (Redisson's `generateId()`), as 16 bytes.
pub fn permit_id(hex: &str) -> Result<Vec<u8>> {
    let bad = || {
        Error::InvalidArgument(format!(
            "Invalid permitId {hex:?}: expected 32 hexadecimal digits"
        ))
    };
    if hex.len() != 32 || !hex.is_ascii() {
        return Err(bad());
    }
    (0..16)
        .map(|i| {
            hex.get(2 * i..2 * i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(bad)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_redissons_byte_for_byte() {
        // SHA-1 of each Java string literal chain, concatenated (computed
        // from the Java source at 66863978b4a9, not from these constants).
        let want = [
            (SEM_TRY_ACQUIRE, "c7dc9d189c1715465a31a06ddbc008585e0c20be"),
            (SEM_RELEASE, "ae27582488dd01f4e238cc0733a12146d410eb44"),
            (
                SEM_RELEASE_IF_EXISTS,
                "6883802454c09d455e3234c8b01549adf1fb8b4c",
            ),
            (SEM_DRAIN, "c87766d572855e9461c4ecd453db5d1cbab6119e"),
            (
                TRY_SET_PERMITS_TTL,
                "38bf99884eb94708a40a9aabacb15b4c5f16e804",
            ),
            (TRY_SET_PERMITS, "241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c"),
            (SEM_ADD_PERMITS, "98238d408c6755085344670d3a2ddaa55cf177a9"),
            (PES_TRY_ACQUIRE, "992c96b09a3d8ea0b37f5dc12e5347a44d93909d"),
            (PES_TRY_RELEASE, "4ce079451bee2993ce00c8a4e205b536c6ccad67"),
            (PES_AVAILABLE, "26b3972b2c9e617556282f404cb79709d746a713"),
            (PES_GET_PERMITS, "e242db5c1c68811b0d26a41937dcf22415b6d872"),
            (
                PES_ACQUIRED_PERMITS,
                "6f0b0be79a0c146c778cb14f40c10eb5b706e574",
            ),
            (PES_SET_PERMITS, "494d8561fee0cdb033f6c28d74c052c52189a578"),
            (PES_ADD_PERMITS, "ec6fb1cd5f66817424e8fe70fee7929391b7c6f0"),
            (PES_UPDATE_LEASE, "2298b02cc67a89f2a638e47503db3675c73d77f5"),
            (
                PES_GET_LEASE_TIME,
                "8be95cb5221cc7ee883cacb8859a8b32ef501a0e",
            ),
            (LATCH_COUNT_DOWN, "38060fab26b0e7c5982a5cfd7ad542e44d3da19b"),
            (
                LATCH_TRY_SET_COUNT,
                "2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892",
            ),
        ];
        for (body, hash) in want {
            assert_eq!(Lua::new(body).hash(), hash, "{body}");
        }
    }

    #[test]
    fn replies_become_numbers() {
        assert_eq!(number(&Value::Nil, "x").unwrap(), 0);
        assert_eq!(number(&Value::Int(-3), "x").unwrap(), -3);
        assert_eq!(number(&Value::BulkString(b"12".to_vec()), "x").unwrap(), 12);
        assert!(number(&Value::BulkString(b"abc".to_vec()), "x").is_err());
    }

    #[test]
    fn a_permit_waiter_sleeps_until_the_earliest_expiry() {
        assert_eq!(until_expiry(Some(1_000), 900), Duration::from_millis(101));
        assert_eq!(until_expiry(Some(1_000), 5_000), Duration::from_millis(1));
        assert_eq!(until_expiry(Some(i64::MAX), i64::MIN), SAFETY_NET);
        assert_eq!(until_expiry(None, 0), SAFETY_NET);
    }

    #[test]
    fn the_wall_clock_is_past_2020() {
        assert!(wall_ms() > 1_577_836_800_000);
    }

    #[test]
    fn permit_ids_are_32_hex_digits() {
        let id = permit_id("00ff10aB00ff10ab00ff10ab00ff10ab").unwrap();
        assert_eq!(id.len(), 16);
        assert_eq!(id[1], 0xff);
        for bad in [
            "",
            "abc",
            "zz00000000000000000000000000000000",
            "é0000000000000000000000000000000",
        ] {
            assert!(permit_id(bad).is_err(), "{bad}");
        }
    }
}
