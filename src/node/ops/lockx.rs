//! The redislock face's options beyond redislock 1.3.0 (`autoExtend`,
//! `fencing`, `wakeOnRelease`, `inspect`), as both engines run them: one
//! [`Request`] from JavaScript's arguments, one [`run`] over whatever
//! connection and timer the engine has. Locks created without these options
//! never come here: their traffic stays redislock's, byte for byte.
//! Also what the napi registrations ask of the keeper about such a lock
//! (how long its lease runs; stop keeping it).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::BigInt;
use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::hold::{self, Extension};
use crate::keeper::{self, Held, Watch};
use crate::locks::keys::{companion, release_channel, FENCING_SUFFIX};
use crate::locks::replicas::{self, Replicas};
use crate::locks::token::{self, Grant};
use crate::node::cancels::{cancel_slot_of, CancelSlot};
use crate::node::engine::contract::Engine;
use crate::node::envs::watch_of;
use crate::node::options;
use crate::node::runtime::rt;
use crate::node::targets::{target, Target};
use crate::node::wake::{poke, wake_source, wakeups};
use crate::node::wire::codes::{Flag, LockOp};
use crate::node::wire::done::{Inspected, Reply, Value};
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::timer::Timer;

pub(crate) struct Request {
    op: LockOp,
    key: String,
    token: String,
    /// ACQUIRE: ttl, retries, delay; EXTEND: ms.
    nums: [f64; 3],
    flags: u32,
    /// An acquire's lease keeper bounds (KEEP): see `envs::watch_of`.
    watch: Option<Watch>,
    /// `replicas: N` and `replicaTimeout` (0: none).
    replicas: Option<Replicas>,
    cancel: Option<CancelSlot>,
}

impl Request {
    /// From JavaScript's arguments (the slots of `nums` are named by
    /// [`Slot`]); `cancel` is the slot `cancel_slot_of` made for it.
    pub(crate) fn parse(
        op: LockOp,
        key: String,
        token: String,
        nums: &Nums,
        cancel: Option<CancelSlot>,
    ) -> Result<Request> {
        let flags = options::flags(nums)?;
        let keep = op == LockOp::Acquire && Flag::Keep.in_bits(flags);
        Ok(Request {
            op,
            key,
            token,
            nums: [
                nums.get(Slot::Time),
                nums.get(Slot::Retries),
                nums.get(Slot::Delay),
            ],
            flags,
            watch: keep.then(|| watch_of(nums)).transpose()?,
            replicas: options::replicas(nums)?,
            cancel,
        })
    }

    /// Whether it waits for replicas (`WAIT`): then it wants a connection
    /// of its own (a `Lane`).
    pub(crate) fn acknowledged(&self) -> bool {
        self.replicas.is_some()
    }

    fn has(&self, flag: Flag) -> bool {
        flag.in_bits(self.flags)
    }

    fn held(&self, target: &Target) -> Held {
        Held::new(&target.shared, &self.key, &self.token, token::KEPT)
    }
}

/// A lockx operation on endpoint `endpoint`, on engine `E`: the cancel
/// slot is registered now, before the operation starts, so that a cancel
/// right after the call is never lost.
pub(crate) fn lockx<E: Engine>(
    endpoint: u32,
    op: LockOp,
    key: String,
    token: String,
    nums: &[f64],
) -> impl Future<Output = Result<Reply>> {
    let nums = Nums::new(nums);
    let cancel = nums.as_ref().ok().and_then(cancel_slot_of);
    async move {
        let req = Request::parse(op, key, token, &nums?, cancel)?;
        let target = target(endpoint)?;
        // WAIT blocks its connection: replica-acknowledged operations
        // each run on a lane of their own.
        let route = match req.acknowledged() {
            true => E::lane(endpoint, &target),
            false => E::shared(endpoint)?,
        };
        let mut c = E::connect(&route).await?;
        run(req, target, &mut c, E::timer()).await
    }
}

/// Runs `req` against `target` over `conn`.
///
/// Replies: ACQUIRE `No` (held by another) or a `Grant` (its fencing token
/// if asked for; how long ago the winning attempt was sent); RELEASE
/// `Yes`/`No` (deleted / not ours); EXTEND `No` or its `Age`; INSPECT
/// what was found (`Inspected`).
async fn run<C: ConnectionLike>(
    mut req: Request,
    target: Arc<Target>,
    conn: &mut C,
    timer: &dyn Timer,
) -> Result<Reply> {
    match req.op {
        LockOp::Acquire => {
            let opts = options::acquire_of(req.nums[0], req.nums[1], req.nums[2])?;
            let counter = req
                .has(Flag::Fencing)
                .then(|| companion(&req.key, FENCING_SUFFIX, "fencing counter"))
                .transpose()?;
            let channel = req
                .has(Flag::Wake)
                .then(|| release_channel(&req.key))
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
                dialect: Some(target.shared.dialect()),
            };
            let token = &req.token;
            let Some(granted) =
                token::acquire_with(conn, timer, &req.key, token, &opts, grant).await?
            else {
                return Ok(Reply::No);
            };
            if let Some(w) = req.watch.take() {
                let held = req.held(&target);
                let renewal = token::Kept {
                    server: Arc::clone(&target.shared),
                    key: req.key,
                    token: req.token,
                };
                let (ttl, sent) = (opts.ttl_ms, granted.sent);
                let until = sent + Duration::from_millis(ttl);
                hold::keep(rt()?, renewal, held, ttl, sent, until, w);
            }
            Ok(Reply::With(Value::Grant {
                fencing: granted.fencing,
                age_us: age_us(granted.sent),
                attempts: granted.attempts,
            }))
        }
        LockOp::Release => {
            let kept = req.has(Flag::Keep).then(|| req.held(&target));
            let pause = hold::pause(kept).await;
            let (key, token) = (&req.key, &req.token);
            let dialect = target.shared.dialect();
            match req.has(Flag::Wake) {
                true => {
                    let channel = release_channel(key)?;
                    let source = wake_source(&target, conn).await;
                    let released =
                        token::release_announced(conn, dialect, key, token, &channel, source).await;
                    pause.released(&released, || poke(&target, source, &channel));
                    Ok(Reply::from(released?))
                }
                false => {
                    let released = token::release(conn, dialect, key, token).await;
                    pause.released(&released, || {});
                    Ok(Reply::from(released?))
                }
            }
        }
        LockOp::Extend => {
            let ms = crate::limits::extension_from_number(req.nums[0])?;
            let kept = req.has(Flag::Keep).then(|| req.held(&target));
            let pause = hold::pause(kept).await;
            let sent = Instant::now();
            let dialect = target.shared.dialect();
            let mut extended = token::extend(conn, dialect, &req.key, &req.token, ms).await;
            if let (Ok(true), Some(want)) = (&extended, req.replicas) {
                if let Err(e) = replicas::wait_for(conn, want).await {
                    // Not acknowledged: the lock cannot be vouched for.
                    let _ = token::release(conn, dialect, &req.key, &req.token).await;
                    extended = Err(e);
                }
            }
            pause.extended(match &extended {
                Ok(true) => Extension::Confirmed {
                    lease_ms: ms,
                    until: sent + Duration::from_millis(ms),
                },
                Ok(false) | Err(Error::NotReplicated(_)) => Extension::Lost,
                Err(_) => Extension::Unknown,
            });
            Ok(match extended? {
                true => Reply::With(Value::Age(age_us(sent))),
                false => Reply::No,
            })
        }
        LockOp::Inspect => {
            let counter = companion(&req.key, FENCING_SUFFIX, "fencing counter").ok();
            let mut pipe = redis::pipe();
            pipe.cmd("PTTL").arg(&req.key).cmd("GET").arg(&req.key);
            if let Some(c) = &counter {
                pipe.cmd("GET").arg(c);
            }
            let (pttl, owner, fencing): (i64, Option<String>, Option<i64>) = match counter {
                Some(_) => pipe.query_async(conn).await?,
                None => {
                    let (p, o): (i64, Option<String>) = pipe.query_async(conn).await?;
                    (p, o, None)
                }
            };
            Ok(Reply::With(Value::Inspected(Inspected {
                pttl: pttl as f64,
                owner,
                fencing: fencing.map(BigInt::from),
            })))
        }
    }
}

fn age_us(t: Instant) -> u64 {
    t.elapsed().as_micros() as u64
}

/// How long the kept lease of `key` for `token` is known to run, in ms
/// (-1 when it is not kept).
pub(crate) fn remaining(target: &Target, key: &str, token: &str) -> f64 {
    let held = Held::new(&target.shared, key, token, token::KEPT);
    keeper::remaining(&held).map_or(-1.0, |d| d.as_millis() as f64)
}

/// Stops keeping `key` for `token` (a token lock, or a redis-semaphore
/// lock whose identifier it is), sending nothing.
pub(crate) fn drop_kept(target: &Target, key: &str, token: &str) {
    keeper::stop_where(|h| h.same_lock(&target.shared, key) && h.owner == token);
}
