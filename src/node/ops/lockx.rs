//! The redislock face's options beyond redislock 1.3.0 (`autoExtend`,
//! `fencing`, `wakeOnRelease`, `inspect`), as both engines run them: one
//! [`Request`] from JavaScript's arguments, one [`run`] over whatever
//! connection and timer the engine has. Locks created without these options
//! never come here: their traffic stays redislock's, byte for byte.
//! Also what the napi registrations ask of the keeper about such a lock
//! (how long its lease runs; stop keeping it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::keeper::{self, Held, Kind, Servers};
use crate::limits;
use crate::locks::keys::{companion, FENCING_SUFFIX, RELEASED_SUFFIX};
use crate::locks::replicas::{self, Replicas};
use crate::locks::token::{self, AcquireOptions, Grant};
use crate::node::cancels::{cancel_slot_at, CancelSlot};
use crate::node::envs::watch;
use crate::node::runtime::rt;
use crate::node::targets::Target;
use crate::node::wake::{poke, wakeups};
use crate::node::wire::codes::bits::{FENCING, KEEP, WAKE};
use crate::node::wire::codes::lockx::{ACQUIRE, EXTEND, INSPECT, RELEASE};
use crate::node::wire::done::Reply;
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Source;

pub(crate) struct Request {
    op: u32,
    key: String,
    token: String,
    /// ACQUIRE: ttl, retries, delay; EXTEND: ms.
    nums: [f64; 3],
    flags: u32,
    /// The lease keeper's bounds (KEEP): JavaScript's hold id, its
    /// environment, the most event-loop lag and the longest hold (0: none).
    hold: u32,
    env: u32,
    max_lag_ms: u64,
    max_hold_ms: u64,
    /// `replicas: N` and `replicaTimeout` (0: none).
    replicas: Option<Replicas>,
    cancel: Option<CancelSlot>,
}

fn whole_ms(x: f64, what: &str) -> Result<u64> {
    limits::whole_ms(x).ok_or_else(|| limits::not_whole_ms(what, x))
}

impl Request {
    /// From JavaScript's arguments: `nums` is `[a, b, c, flags, hold, env,
    /// maxLagMs, maxHoldMs, cancelId, replicas, replicaTimeout]`, where `a, b, c` are the operation's
    /// numbers; `cancel` is the slot [`cancel_slot`] made for it.
    pub(crate) fn parse(
        op: u32,
        key: String,
        token: String,
        nums: &[f64],
        cancel: Option<CancelSlot>,
    ) -> Result<Request> {
        if nums.len() != NUMS {
            return Err(Error::InvalidArgument(format!(
                "expected {NUMS} numbers, got {}",
                nums.len()
            )));
        }
        let int = |x: f64| (x.is_finite() && x >= 0.0 && x <= u32::MAX as f64).then_some(x as u32);
        let bad = || Error::InvalidArgument("invalid lock operation arguments".into());
        Ok(Request {
            op,
            key,
            token,
            nums: [nums[0], nums[1], nums[2]],
            flags: int(nums[3]).ok_or_else(bad)?,
            hold: int(nums[4]).ok_or_else(bad)?,
            env: int(nums[5]).ok_or_else(bad)?,
            max_lag_ms: whole_ms(nums[6], "maxEventLoopLagMs")?,
            max_hold_ms: whole_ms(nums[7], "maxHoldMs")?,
            replicas: match (int(nums[9]), whole_ms(nums[10], "replicaTimeout")?) {
                (Some(0), _) => None,
                (Some(count), ms) if ms > 0 => Some(Replicas {
                    count,
                    timeout: Duration::from_millis(ms),
                }),
                _ => return Err(bad()),
            },
            cancel,
        })
    }

    /// Whether it waits for replicas (`WAIT`): then it wants a connection
    /// of its own (a `Lane`).
    pub(crate) fn acknowledged(&self) -> bool {
        self.replicas.is_some()
    }

    fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    fn held(&self, target: &Target) -> Held {
        Held::new(&target.shared, &self.key, &self.token, Kind::Token)
    }
}

/// Runs `req` against `target` over `conn`.
///
/// Replies: ACQUIRE `No` (held by another) or `With("<fencing>:<age µs>")`
/// (fencing token or empty; how long ago the winning attempt was sent);
/// RELEASE `Yes`/`No` (deleted / not ours); EXTEND `No` or `With("<age µs>")`;
/// INSPECT `With("<pttl>\n<fencing>\n<owner>")` (pttl as Redis gives it,
/// fencing empty when there is no counter, owner the rest).
pub(crate) async fn run<C: ConnectionLike>(
    req: Request,
    target: Arc<Target>,
    conn: &mut C,
    timer: &dyn Timer,
) -> Result<Reply> {
    match req.op {
        ACQUIRE => {
            let opts = AcquireOptions::from_numbers(req.nums[0], req.nums[1], req.nums[2])?;
            let counter = req
                .has(FENCING)
                .then(|| companion(&req.key, FENCING_SUFFIX, "fencing counter"))
                .transpose()?;
            let channel = req
                .has(WAKE)
                .then(|| companion(&req.key, RELEASED_SUFFIX, "release channel"))
                .transpose()?;
            let subscriber = match &channel {
                Some(_) if !matches!(opts.retries, crate::waiting::retry::Retries::Count(0)) => {
                    Some(wakeups(&target, wake_source(&target, conn).await)?)
                }
                _ => None,
            };
            let grant = Grant {
                fencing: counter.as_deref(),
                wake: subscriber.as_ref().zip(channel.as_deref()),
                cancel: req.cancel.as_ref().map(|c| c.cancel()),
                replicas: req.replicas,
            };
            let token = &req.token;
            let Some(granted) =
                token::acquire_with(conn, timer, &req.key, token, &opts, grant).await?
            else {
                return Ok(Reply::No);
            };
            if req.has(KEEP) {
                let w = watch(req.env, req.hold, req.max_lag_ms, req.max_hold_ms)?;
                let one = Servers::One(Arc::clone(&target.shared));
                let held = req.held(&target);
                let until = granted.sent + Duration::from_millis(opts.ttl_ms);
                keeper::start(rt()?, one, held, opts.ttl_ms, granted.sent, until, Some(w));
            }
            let fencing = granted.fencing.map(|n| n.to_string()).unwrap_or_default();
            Ok(Reply::With(format!("{fencing}:{}", age_us(granted.sent))))
        }
        RELEASE => {
            let paused = if req.has(KEEP) {
                keeper::pause(&req.held(&target)).await
            } else {
                None
            };
            let released = match req.has(WAKE) {
                true => {
                    let channel = companion(&req.key, RELEASED_SUFFIX, "release channel")?;
                    let source = wake_source(&target, conn).await;
                    let sharded = source == Source::Sharded;
                    let released =
                        token::release_announced(conn, &req.key, &req.token, &channel, sharded)
                            .await;
                    if let Ok(true) = released {
                        poke(&target, source, &channel);
                    }
                    released
                }
                false => token::release(conn, &req.key, &req.token).await,
            };
            // Released, not ours, or unknown: no renewal either way.
            if let Some(p) = paused {
                p.stop();
            }
            Ok(if released? { Reply::Yes } else { Reply::No })
        }
        EXTEND => {
            let ms = crate::limits::extension_from_number(req.nums[0])?;
            let paused = if req.has(KEEP) {
                keeper::pause(&req.held(&target)).await
            } else {
                None
            };
            let sent = Instant::now();
            let mut extended = token::extend(conn, &req.key, &req.token, ms).await;
            if let (Ok(true), Some(want)) = (&extended, req.replicas) {
                if let Err(e) = replicas::wait_for(conn, want).await {
                    // Not acknowledged: the lock cannot be vouched for.
                    let _ = token::release(conn, &req.key, &req.token).await;
                    extended = Err(e);
                }
            }
            match (paused, &extended) {
                (Some(p), Ok(true)) => p.extended(ms, sent + Duration::from_millis(ms)),
                (Some(p), Ok(false)) | (Some(p), Err(Error::NotReplicated(_))) => p.stop(),
                _ => {}
            }
            Ok(match extended? {
                true => Reply::With(age_us(sent).to_string()),
                false => Reply::No,
            })
        }
        INSPECT => {
            let counter = companion(&req.key, FENCING_SUFFIX, "fencing counter").ok();
            let mut pipe = redis::pipe();
            pipe.cmd("PTTL").arg(&req.key).cmd("GET").arg(&req.key);
            if let Some(c) = &counter {
                pipe.cmd("GET").arg(c);
            }
            let (pttl, owner, fencing): (i64, Option<String>, Option<String>) = match counter {
                Some(_) => pipe.query_async(conn).await?,
                None => {
                    let (p, o): (i64, Option<String>) = pipe.query_async(conn).await?;
                    (p, o, None)
                }
            };
            let owner = owner.unwrap_or_default();
            let fencing = fencing.unwrap_or_default();
            Ok(Reply::With(format!("{pttl}\n{fencing}\n{owner}")))
        }
        other => Err(Error::InvalidArgument(format!(
            "unknown lock operation {other}"
        ))),
    }
}

/// How `wakeOnRelease` announcements travel on `target`: sharded pub/sub
/// on a Redis Cluster that has it (7.0+, asked once with `COMMAND INFO`),
/// else classic pub/sub (on a cluster, a `PUBLISH` reaches every node).
async fn wake_source<C: ConnectionLike>(target: &Target, conn: &mut C) -> Source {
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

fn age_us(t: Instant) -> u64 {
    t.elapsed().as_micros() as u64
}

/// How many numbers an operation takes (see [`Request::parse`]).
const NUMS: usize = 11;

/// Registers the operation's cancel id (`nums[8]`, 0: none; its
/// environment is `nums[5]`), before it is started, so that a cancel right
/// after the call is never lost.
pub(crate) fn cancel_slot(nums: &[f64]) -> Option<CancelSlot> {
    cancel_slot_at(nums, 5, 8)
}

/// How long the kept lease of `key` for `token` is known to run, in ms
/// (-1 when it is not kept).
pub(crate) fn remaining(target: &Target, key: &str, token: &str) -> f64 {
    let held = Held::new(&target.shared, key, token, Kind::Token);
    keeper::remaining(&held).map_or(-1.0, |d| d.as_millis() as f64)
}

/// Stops keeping `key` for `token`, sending nothing.
pub(crate) fn drop_kept(target: &Target, key: &str, token: &str) {
    let held = Held::new(&target.shared, key, token, Kind::Token);
    keeper::stop_where(|h| *h == held);
}
