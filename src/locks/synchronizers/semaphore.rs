//! Java Redisson's RSemaphore: a counter at the object's name, its scripts
//! byte for byte (RedissonSemaphore.java), one attempt each, and the
//! acquire's wait.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::aio::ConnectionLike;

use super::common::{announced, number, once, wait_for, Names, PUBLISH, SAFETY_NET};
use crate::error::{Error, Result};
use crate::locks::reentrant::Wait;
use crate::transport::lua::Lua;
use crate::waiting::retry::Attempt;
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Wakeups;

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

struct Scripts {
    sem_try_acquire: Lua,
    sem_release: Lua,
    sem_release_if_exists: Lua,
    sem_drain: Lua,
    try_set_permits: Lua,
    try_set_permits_ttl: Lua,
    sem_add_permits: Lua,
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
    })
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
