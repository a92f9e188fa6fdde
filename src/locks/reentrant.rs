//! Reentrant hash locks on Redisson's format, as node-redisson 1.0.4 writes
//! them: the lock is a hash at the lock name, its one field
//! `<instance id>:<client id>` holds the hold count, and the key carries a
//! PTTL. A release announces itself on the lock's channel (pub/sub, or an
//! entry in node-redisson's event stream), so waiters of either library wake.
//!
//! The scripts are node-redisson's, byte for byte (so EVALSHA hashes match
//! and both libraries share Redis's script cache). A `tryLock` is one
//! `Attempt` of the one wait loop (`waiting::retry`): after its first failed
//! attempt it subscribes, and it sleeps at most until the holder's lease
//! ends or its own deadline, whichever is first (see [`try_lock`]).
//!
//! Redisson's other hash locks share this file's choreography — the wait,
//! the unlock latch, the renewal — and bring their own scripts and names
//! ([`Flavor`]): the read and write locks (`locks::rwlock`) and the fair
//! lock (`locks::fair`), on Java Redisson's layout.
//!
//! Written against `ConnectionLike`, a [`Timer`] and a [`Wakeups`] source, so
//! it runs on either engine.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::aio::ConnectionLike;
use redis::Value;

use crate::error::{Error, Result};
use crate::limits::{check_not_empty, is_positive_ms, not_positive_ms};
use crate::locks::renewal::{Lost, Renewal};
use crate::locks::resend::{eval_retrying, query_retrying, resent, Resend};
use crate::locks::{fair, rwlock};
use crate::transport::connection::SharedConnection;
use crate::transport::lua::Lua;
use crate::waiting::retry::{retry, Attempt, Retries, Schedule};
use crate::waiting::timer::{wall_ms, Timer};
use crate::waiting::wakeups::{Source, Wakeups};

/// node-redisson's `UnlockMessages.UNLOCK`: the message a release publishes.
pub const UNLOCK_MESSAGE: &str = "0";

/// How a release announces itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Adapter {
    /// `PUBLISH` on the lock's channel (node-redisson's default).
    PubSub,
    /// `XADD redisson:events MAXLEN ~ 100 * <channel> 0`.
    Streams,
}

impl Adapter {
    /// 0 or 1: where per-adapter things sit in arrays.
    pub fn index(self) -> usize {
        match self {
            Adapter::PubSub => 0,
            Adapter::Streams => 1,
        }
    }

    pub fn parse(name: &str) -> Result<Adapter> {
        match name {
            "pubsub" => Ok(Adapter::PubSub),
            "streams" => Ok(Adapter::Streams),
            other => Err(Error::InvalidArgument(format!(
                "Invalid eventAdapter {other:?}: expected 'pubsub' or 'streams'"
            ))),
        }
    }
}

/// Where a waiter hears of releases announced with `a`.
impl From<Adapter> for Source {
    fn from(a: Adapter) -> Source {
        match a {
            Adapter::PubSub => Source::PubSub,
            Adapter::Streams => Source::Streams,
        }
    }
}

/// Which of Redisson's hash locks: each brings its scripts and names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// node-redisson's `getLock`.
    Plain,
    /// `getReadWriteLock(name).readLock()`: shared with other readers.
    Read,
    /// `getReadWriteLock(name).writeLock()`: alone (but for its own reads).
    Write,
    /// `getFairLock(name)`: waiters queue, and wait their turn at most
    /// this long each (ms) once they stop renewing it.
    Fair { waiter_timeout_ms: u64 },
}

impl Flavor {
    /// The hash field `field`'s holds are counted in.
    pub fn holder(self, field: &str) -> Cow<'_, str> {
        match self {
            Flavor::Write => Cow::Owned(rwlock::write_field(field)),
            _ => Cow::Borrowed(field),
        }
    }

    /// Where a release made by this process may wake a waiter of it at
    /// once (`poke`): the lock's channel; none for a fair lock, whose
    /// release is announced to the next waiter alone.
    pub fn poke_channel(self, channel: &str) -> Option<&str> {
        match self {
            Flavor::Fair { .. } => None,
            _ => Some(channel),
        }
    }

    /// The channel `field` hears its releases on, from the lock's channel.
    pub fn wake_channel<'a>(self, channel: &'a str, field: &str) -> Cow<'a, str> {
        match self {
            Flavor::Fair { .. } => Cow::Owned(fair::waiter_channel(channel, field)),
            _ => Cow::Borrowed(channel),
        }
    }
}

const TRY_LOCK: &str = "
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end
return redis.call('pttl', KEYS[1]);";

const RENEW: &str = "
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then 
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;";

const UNLOCK_HEAD: &str = "
local val = redis.call('get', KEYS[3]);
if val ~= false then
  return tonumber(val);
end
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  redis.call('set', KEYS[3], 0, 'px', ARGV[4]);
  return 0;
else
  redis.call('del', KEYS[1]);
  ";
const UNLOCK_TAIL: &str = "
  redis.call('set', KEYS[3], 1, 'px', ARGV[4]);
  return 1;
end";

const FORCE_HEAD: &str = "
if (redis.call('del', KEYS[1]) == 1) then 
  ";
const FORCE_TAIL: &str = "
  return 1
else
  return 0
end";

const PUBLISH: &str = "redis.call('publish', KEYS[2], ARGV[1]);";
const XADD: &str =
    "redis.call('xadd', 'redisson:events', 'MAXLEN', '~', 100, '*', KEYS[2], ARGV[1]);";

struct Scripts {
    try_lock: Lua,
    renew: Lua,
    unlock: [Lua; 2],
    force: [Lua; 2],
    read: FlavorScripts,
    read_is_locked: Lua,
    read_renew: Lua,
    write: FlavorScripts,
    fair_once: Lua,
    fair: FlavorScripts,
    fair_give_up: Lua,
    fair_heartbeat: Lua,
}

/// A flavour's attempt, unlock and force-unlock scripts.
struct FlavorScripts {
    attempt: Lua,
    unlock: Lua,
    force: Lua,
}

fn scripts() -> &'static Scripts {
    static S: std::sync::OnceLock<Scripts> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let with = |head: &str, tail: &str| {
            [
                Lua::new(format!("{head}{PUBLISH}{tail}")),
                Lua::new(format!("{head}{XADD}{tail}")),
            ]
        };
        Scripts {
            try_lock: Lua::new(TRY_LOCK),
            renew: Lua::new(RENEW),
            unlock: with(UNLOCK_HEAD, UNLOCK_TAIL),
            force: with(FORCE_HEAD, FORCE_TAIL),
            read: FlavorScripts {
                attempt: Lua::new(rwlock::READ_TRY),
                unlock: Lua::new(rwlock::READ_UNLOCK),
                force: Lua::new(rwlock::READ_FORCE),
            },
            read_is_locked: Lua::new(rwlock::READ_IS_LOCKED),
            read_renew: Lua::new(rwlock::READ_RENEW),
            write: FlavorScripts {
                attempt: Lua::new(rwlock::WRITE_TRY),
                unlock: Lua::new(rwlock::WRITE_UNLOCK),
                force: Lua::new(rwlock::WRITE_FORCE),
            },
            fair_once: Lua::new(fair::FAIR_ONCE),
            fair: FlavorScripts {
                attempt: Lua::new(fair::FAIR_WAIT),
                unlock: Lua::new(fair::FAIR_UNLOCK),
                force: Lua::new(fair::FAIR_FORCE),
            },
            fair_give_up: Lua::new(fair::FAIR_GIVE_UP),
            fair_heartbeat: Lua::new(fair::FAIR_HEARTBEAT),
        }
    })
}

fn integer(v: &Value, what: &str) -> Result<i64> {
    match v {
        Value::Int(n) => Ok(*n),
        other => Err(Error::Redis(format!(
            "Unexpected reply to {what}: {other:?} (is the key a Redisson lock hash?)"
        ))),
    }
}

fn check_name(name: &str) -> Result<()> {
    check_not_empty("name", name)
}

fn check_ms(ms: u64, what: &str) -> Result<()> {
    match is_positive_ms(ms) {
        true => Ok(()),
        false => Err(not_positive_ms(what, ms)),
    }
}

/// One attempt on checked arguments (`lease` already as text): `None` when
/// the lock is now held by `field` (taken or re-entered), else the holder's
/// PTTL in ms (a fair lock's: how long to wait). `waiting`: a fair lock's
/// attempt of a wait, which queues the field.
async fn attempt<C: ConnectionLike>(
    conn: &mut C,
    flavor: Flavor,
    name: &str,
    field: &str,
    lease: &str,
    waiting: bool,
) -> Result<Option<i64>> {
    let v = match attempt_eval(conn, flavor, name, field, lease, waiting)
        .await
        .map_err(Error::from)
    {
        // A first try that broke may have landed: HINCRBY twice would count
        // two holds. Ask whether the field is there before trying again.
        Err(Error::Connection(_)) => {
            let held: bool = redis::cmd("HEXISTS")
                .arg(name)
                .arg(&*flavor.holder(field))
                .query_async(conn)
                .await?;
            if held {
                return Ok(None);
            }
            attempt_eval(conn, flavor, name, field, lease, waiting).await?
        }
        other => other?,
    };
    match v {
        Value::Nil => Ok(None),
        other => integer(&other, "the lock script").map(Some),
    }
}

/// The attempt script of `flavor`, once.
async fn attempt_eval<C: ConnectionLike>(
    conn: &mut C,
    flavor: Flavor,
    name: &str,
    field: &str,
    lease: &str,
    waiting: bool,
) -> redis::RedisResult<Value> {
    let s = scripts();
    let (lease, by) = (lease.as_bytes(), field.as_bytes());
    match flavor {
        Flavor::Plain => s.try_lock.run(conn, &[name], &[lease, by]).await,
        Flavor::Read => {
            let timeouts = rwlock::timeout_prefix(name, field);
            let write = rwlock::write_field(field);
            let args: [&[u8]; 3] = [lease, by, write.as_bytes()];
            s.read.attempt.run(conn, &[name, &timeouts], &args).await
        }
        Flavor::Write => {
            let write = rwlock::write_field(field);
            s.write
                .attempt
                .run(conn, &[name], &[lease, write.as_bytes()])
                .await
        }
        Flavor::Fair { waiter_timeout_ms } => {
            let (queue, timeouts) = (fair::queue_name(name), fair::timeouts_name(name));
            let (now, wait) = (wall_ms().to_string(), waiter_timeout_ms.to_string());
            let keys = [name, &queue, &timeouts];
            match waiting {
                true => {
                    let args: [&[u8]; 4] = [lease, by, wait.as_bytes(), now.as_bytes()];
                    s.fair.attempt.run(conn, &keys, &args).await
                }
                false => {
                    let args: [&[u8]; 4] = [lease, by, now.as_bytes(), wait.as_bytes()];
                    s.fair_once.run(conn, &keys, &args).await
                }
            }
        }
    }
}

/// A queued fair waiter's heartbeat ([`fair::FAIR_HEARTBEAT`]): its
/// deadline moves to one waiter timeout per place from now.
async fn fair_heartbeat<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    field: &str,
    waiter_timeout_ms: u64,
) -> Result<()> {
    let (queue, timeouts) = (fair::queue_name(name), fair::timeouts_name(name));
    let deadline = wall_ms().saturating_add(waiter_timeout_ms).to_string();
    let wait = waiter_timeout_ms.to_string();
    let args: [&[u8]; 3] = [field.as_bytes(), deadline.as_bytes(), wait.as_bytes()];
    eval_retrying(conn, &scripts().fair_heartbeat, &[&queue, &timeouts], &args).await?;
    Ok(())
}

/// A fair waiter that gives up leaves the queue (Redisson's
/// `acquireFailedAsync`); best effort: its deadline drops it anyway.
async fn fair_give_up<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    field: &str,
    waiter_timeout_ms: u64,
) {
    let (queue, timeouts) = (fair::queue_name(name), fair::timeouts_name(name));
    let wait = waiter_timeout_ms.to_string();
    let args: [&[u8]; 2] = [field.as_bytes(), wait.as_bytes()];
    let _ = eval_retrying(conn, &scripts().fair_give_up, &[&queue, &timeouts], &args).await;
}

/// What a wait is bounded by.
#[derive(Clone, Copy, Debug)]
pub enum Wait {
    /// One attempt (`waitTime` 0).
    Once,
    /// Until this long has passed since the call.
    For(Duration),
    /// Until the lock is taken (`waitTime` false).
    Forever,
}

impl Wait {
    /// The wait loop's schedule for this bound, from now on `timer`: no
    /// pause of its own (a release, the attempt's hint or the deadline
    /// ends each one).
    pub(crate) fn schedule(self, timer: &dyn Timer) -> Schedule {
        let retries = match self {
            Wait::Once => Retries::Count(0),
            Wait::For(d) => match timer.now().checked_add(d) {
                Some(deadline) => Retries::Until(deadline),
                None => Retries::Forever,
            },
            Wait::Forever => Retries::Forever,
        };
        Schedule {
            retries,
            delay: Duration::MAX,
            jitter: Duration::ZERO,
        }
    }
}

/// node-redisson's `tryLock`: attempts until the lock is taken or the wait
/// is over; when held, how many attempts it took. One `Attempt` of the one
/// wait loop (`retry::retry`): a first attempt that fails subscribes to the
/// lock's channel and tries again at once, so a release between a failed
/// attempt and the sleep is never missed; each sleep ends on a release, at the
/// holder's PTTL (the attempt's hint), or at the deadline, and is followed
/// by an attempt. An uncontended call never subscribes; a subscription that
/// fails ends the call with its error.
#[allow(clippy::too_many_arguments)]
pub async fn try_lock<C: ConnectionLike>(
    conn: &mut C,
    timer: &dyn Timer,
    wakeups: Option<&Arc<Wakeups>>,
    name: &str,
    channel: &str,
    field: &str,
    lease_ms: u64,
    wait: Wait,
    flavor: Flavor,
) -> Result<Option<u64>> {
    check_name(name)?;
    check_ms(lease_ms, "lease time")?;
    let lease = lease_ms.to_string();
    let schedule = wait.schedule(timer);
    let waiting = !matches!(wait, Wait::Once);
    let mut one = Hold {
        conn,
        name,
        field,
        lease: &lease,
        flavor,
        waiting,
    };
    let channel = flavor.wake_channel(channel, field);
    let channel: &str = &channel;
    let wake = wakeups.map(|w| (std::slice::from_ref(w), std::slice::from_ref(&channel)));
    let waited = retry(&mut one, timer, &schedule, &|| 0.0, wake, None).await;
    let held = matches!(&waited, Ok(w) if w.outcome.is_ok());
    if let (Flavor::Fair { waiter_timeout_ms }, true, false) = (flavor, waiting, held) {
        fair_give_up(one.conn, name, field, waiter_timeout_ms).await;
    }
    let waited = waited?;
    Ok(held.then_some(waited.attempts))
}

/// One `tryLock` attempt for `field` (see [`attempt`]): lost with the
/// holder's PTTL in ms.
struct Hold<'a, C> {
    conn: &'a mut C,
    name: &'a str,
    field: &'a str,
    lease: &'a str,
    flavor: Flavor,
    /// Not a one-shot `tryLock`: a fair lock's attempt queues.
    waiting: bool,
}

impl<C: ConnectionLike> Attempt for Hold<'_, C> {
    type Won = ();
    type Lost = i64;
    const WAKEUPS_REQUIRED: bool = true;
    // Java Redisson wakes one waiter per UNLOCK_MESSAGE (0) and every
    // waiter on a write unlock's READ_UNLOCK_MESSAGE (1).
    const ONE_AT_A_TIME: bool = true;

    async fn attempt(&mut self) -> Result<std::result::Result<(), i64>> {
        let (conn, name, field) = (&mut *self.conn, self.name, self.field);
        let pttl = attempt(conn, self.flavor, name, field, self.lease, self.waiting).await?;
        match (pttl, self.flavor) {
            (None, _) => Ok(Ok(())),
            (Some(wait), Flavor::Fair { waiter_timeout_ms }) if self.waiting => {
                // Queued: keep its place, and try again before the
                // deadline it just renewed could pass.
                fair_heartbeat(conn, name, field, waiter_timeout_ms).await?;
                let beat = (waiter_timeout_ms / 3).max(1) as i64;
                Ok(Err(wait.clamp(FAIR_MIN_PAUSE_MS.min(beat), beat)))
            }
            (Some(pttl), _) => Ok(Err(pttl)),
        }
    }

    fn retry_within(pttl: &i64) -> Option<Duration> {
        Some(retry_within(*pttl))
    }
}

/// The shortest pause of a fair waiter (its turn is announced to it; a
/// pause of 0 comes from a lock with no TTL or a queue head that has not
/// taken it yet).
const FAIR_MIN_PAUSE_MS: i64 = 50;

/// How long to sleep at most while the lock is held with `pttl`: the
/// holder's lease bounds the sleep, as past it the key has expired (a
/// crashed holder is never announced). A key without a TTL (-1) gets a
/// re-check after a second, one that just vanished (-2) at once.
fn retry_within(pttl: i64) -> Duration {
    match pttl {
        ms if ms > 0 => Duration::from_millis(ms as u64),
        -2 => Duration::ZERO,
        _ => Duration::from_millis(1000),
    }
}

/// How long an unlock latch lives: long enough for a retried unlock (after
/// a timeout or a broken connection) to find the first one's outcome.
pub fn latch_ms(command_timeout: Duration) -> u64 {
    (command_timeout.as_millis() as u64)
        .saturating_mul(4)
        .clamp(1000, 60_000)
}

/// What an unlock did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unlocked {
    /// The hold count went down and is still above zero.
    Decremented,
    /// The last hold: the key is gone and the release was announced.
    Released,
    /// `field` did not hold the lock.
    NotHeld,
}

/// Names of one unlock call.
pub struct UnlockKeys<'a> {
    pub name: &'a str,
    pub channel: &'a str,
    pub latch: &'a str,
    pub adapter: Adapter,
    pub flavor: Flavor,
}

/// One unlock's arguments, for its flavour.
struct UnlockCall<'a> {
    keys: &'a UnlockKeys<'a>,
    field: Cow<'a, str>,
    lease: String,
    latch_ms: String,
    /// A reader's timeout prefix and key prefix; a fair lock's queue and
    /// deadlines (empty for the others).
    extra: [String; 2],
    /// A fair lock's clock (ms; empty for the others).
    now: String,
}

impl<'a> UnlockCall<'a> {
    fn new(keys: &'a UnlockKeys<'a>, field: &'a str, lease_ms: u64, latch_ms: u64) -> Self {
        let (extra, now) = match keys.flavor {
            Flavor::Read => (
                [
                    rwlock::timeout_prefix(keys.name, field),
                    rwlock::key_prefix(keys.name),
                ],
                String::new(),
            ),
            Flavor::Fair { .. } => (
                [fair::queue_name(keys.name), fair::timeouts_name(keys.name)],
                wall_ms().to_string(),
            ),
            _ => ([String::new(), String::new()], String::new()),
        };
        UnlockCall {
            keys,
            field: keys.flavor.holder(field),
            lease: lease_ms.to_string(),
            latch_ms: latch_ms.to_string(),
            extra,
            now,
        }
    }

    /// Runs the flavour's unlock script with its keys and arguments
    /// (Redisson's order for each).
    async fn eval<C: ConnectionLike>(&self, conn: &mut C) -> redis::RedisResult<Value> {
        let (s, k) = (scripts(), self.keys);
        let (field, lease, latch) = (
            self.field.as_bytes(),
            self.lease.as_bytes(),
            self.latch_ms.as_bytes(),
        );
        let publish = b"publish".as_slice();
        let unlocked = UNLOCK_MESSAGE.as_bytes();
        match k.flavor {
            Flavor::Plain => {
                let args: [&[u8]; 4] = [unlocked, lease, field, latch];
                let keys = [k.name, k.channel, k.latch];
                s.unlock[k.adapter.index()].run(conn, &keys, &args).await
            }
            Flavor::Read => {
                let args: [&[u8]; 4] = [unlocked, field, publish, latch];
                let keys = [k.name, k.channel, &self.extra[0], &self.extra[1], k.latch];
                s.read.unlock.run(conn, &keys, &args).await
            }
            Flavor::Write => {
                let released = rwlock::WRITE_RELEASED.as_bytes();
                let args: [&[u8]; 5] = [released, lease, field, publish, latch];
                s.write
                    .unlock
                    .run(conn, &[k.name, k.channel, k.latch], &args)
                    .await
            }
            Flavor::Fair { .. } => {
                let now = self.now.as_bytes();
                let args: [&[u8]; 6] = [unlocked, lease, field, now, publish, latch];
                let keys = [k.name, &self.extra[0], &self.extra[1], k.channel, k.latch];
                s.fair.unlock.run(conn, &keys, &args).await
            }
        }
    }
}

/// node-redisson's `unlock`: one hold fewer, the release announced on the
/// last one. The latch makes a retry (after a timeout or a broken
/// connection) report the first try's outcome instead of decrementing
/// again; it is deleted afterwards. The retry goes over `reconnect()`'s
/// connection: the one that failed was retired, and a reply held up on it
/// would hold up the retry's too.
pub async fn unlock<C, F, Fut>(
    conn: &mut C,
    reconnect: F,
    keys: &UnlockKeys<'_>,
    field: &str,
    lease_ms: u64,
    latch_ms: u64,
) -> Result<Unlocked>
where
    C: ConnectionLike,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<C>>,
{
    check_name(keys.name)?;
    let call = UnlockCall::new(keys, field, lease_ms, latch_ms);
    let first = call.eval(conn).await.map_err(Error::from);
    let (reply, mut fresh) = match first {
        Err(Error::Connection(_)) | Err(Error::Timeout(_)) => {
            let mut again = reconnect().await?;
            let reply = call.eval(&mut again).await.map_err(Error::from);
            (reply, Some(again))
        }
        other => (other, None),
    };
    let mut outcome = match reply? {
        Value::Nil => Unlocked::NotHeld,
        v => match integer(&v, "the unlock script")? {
            0 => Unlocked::Decremented,
            _ => Unlocked::Released,
        },
    };
    if let (Flavor::Read, Unlocked::Decremented) = (keys.flavor, outcome) {
        // A reader's script answers 0 while other readers hold the lock,
        // whether or not this one still does: its field says.
        let mut exists = redis::cmd("HEXISTS");
        exists.arg(keys.name).arg(field);
        let left: bool = match fresh.as_mut() {
            Some(again) => exists.query_async(again).await?,
            None => exists.query_async(conn).await?,
        };
        if !left {
            outcome = Unlocked::Released;
        }
    }
    if fresh.is_some() || outcome != Unlocked::NotHeld {
        // Best effort: the latch expires by itself anyway.
        let del = redis::cmd("DEL").arg(keys.latch).to_owned();
        let _: redis::RedisResult<Value> = match fresh {
            Some(mut again) => del.query_async(&mut again).await,
            None => del.query_async(conn).await,
        };
    }
    Ok(outcome)
}

/// node-redisson's `forceUnlock`: deletes the lock whoever holds it and
/// announces the release. `true` when there was a lock (a read or write
/// lock: a lock in that mode).
pub async fn force_unlock<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    channel: &str,
    adapter: Adapter,
    flavor: Flavor,
) -> Result<bool> {
    check_name(name)?;
    let s = scripts();
    let publish = b"publish".as_slice();
    let (queue, timeouts, now);
    let (lua, keys, args): (&Lua, Vec<&str>, Vec<&[u8]>) = match flavor {
        Flavor::Plain => (
            &s.force[adapter.index()],
            vec![name, channel],
            vec![UNLOCK_MESSAGE.as_bytes()],
        ),
        Flavor::Read => (
            &s.read.force,
            vec![name, channel],
            vec![UNLOCK_MESSAGE.as_bytes(), publish],
        ),
        Flavor::Write => (
            &s.write.force,
            vec![name, channel],
            vec![rwlock::WRITE_RELEASED.as_bytes(), publish],
        ),
        Flavor::Fair { .. } => {
            (queue, timeouts, now) = (
                fair::queue_name(name),
                fair::timeouts_name(name),
                wall_ms().to_string(),
            );
            (
                &s.fair.force,
                vec![name, &queue, &timeouts, channel],
                vec![UNLOCK_MESSAGE.as_bytes(), now.as_bytes(), publish],
            )
        }
    };
    let deleted = |v: Value| integer(&v, "the force-unlock script");
    match lua.run(conn, &keys, &args).await.map_err(Error::from) {
        // A first try that deleted the lock leaves a resend nothing to delete.
        Err(broken @ Error::Connection(_)) => {
            let again = lua.run(conn, &keys, &args).await.map_err(Error::from);
            resent(broken, again.and_then(deleted), Resend::Removes)
        }
        reply => Ok(deleted(reply?)? == 1),
    }
}

/// The watchdog's renewal: sets the lease to `lease_ms` if `field` still
/// holds the lock. `false`: it does not.
pub async fn renew<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    field: &str,
    lease_ms: u64,
) -> Result<bool> {
    let lease = lease_ms.to_string();
    let v = eval_retrying(
        conn,
        &scripts().renew,
        &[name],
        &[lease.as_bytes(), field.as_bytes()],
    )
    .await?;
    Ok(integer(&v, "the renewal script")? == 1)
}

/// A reader's renewal (Redisson's `ReadLockTask`, for one lock): each of
/// `field`'s read holds and the hash get `lease_ms`. `false`: it holds none.
pub async fn renew_read<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    field: &str,
    lease_ms: u64,
) -> Result<bool> {
    let (lease, prefix) = (lease_ms.to_string(), rwlock::key_prefix(name));
    let args: [&[u8]; 3] = [lease.as_bytes(), b"1", field.as_bytes()];
    let v = eval_retrying(conn, &scripts().read_renew, &[name, &prefix], &args).await?;
    match v {
        Value::Array(items) => Ok(matches!(items.first(), Some(Value::Int(1)))),
        other => Err(Error::Redis(format!(
            "Unexpected reply to the read lock's renewal: {other:?}"
        ))),
    }
}

/// The lease keeper's family tags for a Redisson hash lock and a reader.
pub const KEPT: &str = "redisson";
pub const KEPT_READ: &str = "redisson-read";

/// A Redisson lock kept by the watchdog: `name` held by `holder` (the
/// holder field; a reader's with `read`, its read holds renewed with the
/// hash) on `server`. A renewal refused asks whether the hash is still
/// there: another holder's (taken) or gone (expired).
pub struct Kept {
    pub server: Arc<SharedConnection>,
    pub name: String,
    pub holder: String,
    pub read: bool,
}

impl Renewal for Kept {
    fn renew(&self, lease_ms: u64) -> BoxFuture<'_, Result<Option<Lost>>> {
        Box::pin(async move {
            let conn = &mut self.server.get().await?;
            let (name, holder) = (&self.name, &self.holder);
            let renewed = match self.read {
                true => renew_read(conn, name, holder, lease_ms).await?,
                false => renew(conn, name, holder, lease_ms).await?,
            };
            if renewed {
                return Ok(None);
            }
            let exists: bool = redis::cmd("EXISTS").arg(name).query_async(conn).await?;
            Ok(Some(if exists { Lost::Taken } else { Lost::Expired }))
        })
    }
}

/// node-redisson's `isLocked`: whether the lock name exists; a reader's,
/// whether anyone reads (Redisson's script); a writer's, whether it is in
/// write mode.
pub async fn is_locked<C: ConnectionLike>(
    conn: &mut C,
    name: &str,
    flavor: Flavor,
) -> Result<bool> {
    check_name(name)?;
    match flavor {
        Flavor::Read => {
            let v = eval_retrying(conn, &scripts().read_is_locked, &[name], &[]).await?;
            return Ok(integer(&v, "the read lock's isLocked script")? == 1);
        }
        Flavor::Write => {
            let mode: Option<String> =
                query_retrying(conn, redis::cmd("HGET").arg(name).arg("mode")).await?;
            return Ok(mode.as_deref() == Some("write"));
        }
        _ => {}
    }
    let n: i64 = query_retrying(conn, redis::cmd("EXISTS").arg(name)).await?;
    Ok(n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_node_redissons() {
        let s = scripts();
        // node-redisson builds its scripts by replacing a placeholder; the
        // assembled bodies must match it byte for byte.
        assert!(s.unlock[0].body.contains(
            "redis.call('del', KEYS[1]);\n  redis.call('publish', KEYS[2], ARGV[1]);\n  redis.call('set', KEYS[3], 1"
        ));
        assert!(s.force[1].body.starts_with(
            "\nif (redis.call('del', KEYS[1]) == 1) then \n  redis.call('xadd', 'redisson:events'"
        ));
        assert_ne!(s.unlock[0].hash(), s.unlock[1].hash());
    }

    #[test]
    fn latch_outlives_a_retry() {
        assert_eq!(latch_ms(Duration::from_millis(2000)), 8000);
        assert_eq!(latch_ms(Duration::from_millis(10)), 1000);
        assert_eq!(latch_ms(Duration::from_secs(3600)), 60_000);
    }

    #[test]
    fn adapters_parse() {
        assert_eq!(Adapter::parse("pubsub").unwrap(), Adapter::PubSub);
        assert_eq!(Adapter::parse("streams").unwrap(), Adapter::Streams);
        assert!(Adapter::parse("kafka").is_err());
    }
}
