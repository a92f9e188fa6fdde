//! Java Redisson's RPermitExpirableSemaphore: the counter plus a sorted set
//! of permit ids scored by their expiry (ms since the epoch), its scripts
//! byte for byte (RedissonPermitExpirableSemaphore.java), one attempt each,
//! and the permit acquire's wait (until the earliest expiry at most).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::Value;

use super::common::{announced, number, once, wait_for, wall_ms, Names, PUBLISH, SAFETY_NET};
use crate::error::{Error, Result};
use crate::locks::reentrant::Wait;
use crate::locks::resend::eval_retrying;
use crate::transport::lua::Lua;
use crate::waiting::retry::Attempt;
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Wakeups;

/// RPermitExpirableSemaphore's `nonExpirableTimeout`: the score of a permit
/// without a lease.
pub const NON_EXPIRABLE: i64 = 922_337_203_685_477;

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

struct Scripts {
    pes_try_acquire: Lua,
    pes_try_release: Lua,
    pes_available: Lua,
    pes_get_permits: Lua,
    pes_acquired_permits: Lua,
    pes_set_permits: Lua,
    pes_add_permits: Lua,
    pes_update_lease: Lua,
    pes_get_lease_time: Lua,
}

fn scripts() -> &'static Scripts {
    static S: OnceLock<Scripts> = OnceLock::new();
    S.get_or_init(|| Scripts {
        pes_try_acquire: Lua::new(PES_TRY_ACQUIRE),
        pes_try_release: Lua::new(PES_TRY_RELEASE),
        pes_available: Lua::new(PES_AVAILABLE),
        pes_get_permits: Lua::new(PES_GET_PERMITS),
        pes_acquired_permits: Lua::new(PES_ACQUIRED_PERMITS),
        pes_set_permits: Lua::new(PES_SET_PERMITS),
        pes_add_permits: Lua::new(PES_ADD_PERMITS),
        pes_update_lease: Lua::new(PES_UPDATE_LEASE),
        pes_get_lease_time: Lua::new(PES_GET_LEASE_TIME),
    })
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
    fn a_permit_waiter_sleeps_until_the_earliest_expiry() {
        assert_eq!(until_expiry(Some(1_000), 900), Duration::from_millis(101));
        assert_eq!(until_expiry(Some(1_000), 5_000), Duration::from_millis(1));
        assert_eq!(until_expiry(Some(i64::MAX), i64::MIN), SAFETY_NET);
        assert_eq!(until_expiry(None, 0), SAFETY_NET);
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
