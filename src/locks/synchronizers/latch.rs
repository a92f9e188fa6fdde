//! Java Redisson's RCountDownLatch: a counter at the object's name, its
//! scripts byte for byte (RedissonCountDownLatch.java), and the await's
//! wait for zero.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::aio::ConnectionLike;

use super::common::{
    get_count, number, once, wait_for, Names, NEW_COUNT_MESSAGE, PUBLISH, SAFETY_NET,
    ZERO_COUNT_MESSAGE,
};
use crate::error::Result;
use crate::locks::reentrant::Wait;
use crate::transport::lua::Lua;
use crate::waiting::retry::Attempt;
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Wakeups;

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
    latch_count_down: Lua,
    latch_try_set_count: Lua,
}

fn scripts() -> &'static Scripts {
    static S: OnceLock<Scripts> = OnceLock::new();
    S.get_or_init(|| Scripts {
        latch_count_down: Lua::new(LATCH_COUNT_DOWN),
        latch_try_set_count: Lua::new(LATCH_TRY_SET_COUNT),
    })
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
