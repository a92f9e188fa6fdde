//! The Redisson face's operations, as both engines run them: one
//! [`Request`] from JavaScript's arguments, one [`run`] over whatever
//! connection and timer the engine has. The wake-up subscriber and the
//! watchdog live on the tokio thread for both engines (they must not depend
//! on the JavaScript thread); only waits and unlocks of watched locks talk
//! to them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::hold;
use crate::keeper::{self, Held, Watch};
use crate::limits::{not_positive_ms, not_whole_ms, positive_int};
use crate::locks::fair;
use crate::locks::reentrant::{self, Adapter, Flavor, UnlockKeys, Unlocked, Wait};
use crate::locks::replicas::{self, Replicas};
use crate::node::engine::contract::Engine;
use crate::node::envs::watch_of;
use crate::node::options;
use crate::node::runtime::rt;
use crate::node::targets::{target, Target};
use crate::node::wake::{poke, wakeups};
use crate::node::wire::codes::RedissonOp;
use crate::node::wire::done::{Reply, Value};
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::timer::Timer;

enum Op {
    /// `undo`: with `replicas`, the latch an unacknowledged grant is given
    /// back under.
    TryLock {
        wait: Wait,
        watch: Option<Watch>,
        replicas: Option<Replicas>,
        undo: String,
    },
    Unlock {
        latch: String,
    },
    ForceUnlock,
    IsLocked,
}

pub(crate) struct Request {
    op: Op,
    name: String,
    channel: String,
    field: String,
    lease_ms: u64,
    adapter: Adapter,
    flavor: Flavor,
}

impl Request {
    /// The keeper's name for this lock: its holder field's (a reader's
    /// read holds are renewed with the hash).
    fn held(&self, target: &Target) -> Held {
        let family = match self.flavor {
            Flavor::Read => reentrant::KEPT_READ,
            _ => reentrant::KEPT,
        };
        Held::new(
            &target.shared,
            &self.name,
            &self.flavor.holder(&self.field),
            family,
        )
    }

    /// Whether it waits for replicas (`WAIT`): then it wants a connection
    /// of its own (a `Lane`).
    pub(crate) fn acknowledged(&self) -> bool {
        matches!(
            self.op,
            Op::TryLock {
                replicas: Some(_),
                ..
            }
        )
    }

    /// From JavaScript's arguments: `aux` is the unlock latch's name (a
    /// tryLock's undo latch with replicas); the numbers (by [`Slot`]):
    /// `Time` the lease in ms (the watchdog's timeout when watched),
    /// `WaitMs` (0: one attempt, -1: forever), `Hold` JavaScript's hold id
    /// for the watchdog (0: a fixed lease) with its `Env` and `MaxLagMs`,
    /// and `Replicas` with `ReplicaTimeoutMs` (a tryLock acknowledged by
    /// that many replicas; 0: none); `Flavor` which hash lock, with a fair
    /// lock's `WaiterTimeoutMs` (0: the default).
    pub(crate) fn parse(
        op: RedissonOp,
        name: String,
        channel: String,
        field: String,
        aux: String,
        adapter: &str,
        nums: &Nums,
    ) -> Result<Request> {
        let adapter = Adapter::parse(adapter)?;
        let flavor = match nums.get(Slot::Flavor) {
            0.0 => Flavor::Plain,
            1.0 => Flavor::Read,
            2.0 => Flavor::Write,
            3.0 => Flavor::Fair {
                waiter_timeout_ms: match nums.get(Slot::WaiterTimeoutMs) {
                    0.0 => fair::DEFAULT_WAITER_TIMEOUT_MS,
                    ms => positive_int(ms)
                        .ok_or_else(|| not_positive_ms("fairLockWaitTimeout", ms))?,
                },
            },
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown lock flavor {other}"
                )));
            }
        };
        let lease = nums.get(Slot::Time);
        let lease_ms = match op {
            RedissonOp::TryLock | RedissonOp::Unlock => {
                positive_int(lease).ok_or_else(|| not_positive_ms("lease time", lease))?
            }
            _ => 0,
        };
        let op = match op {
            RedissonOp::TryLock => {
                let wait = nums.get(Slot::WaitMs);
                let wait = if wait == -1.0 {
                    Wait::Forever
                } else if wait == 0.0 {
                    Wait::Once
                } else if let Some(ms) = positive_int(wait) {
                    Wait::For(Duration::from_millis(ms))
                } else {
                    return Err(not_whole_ms("wait time", wait));
                };
                // The watchdog's bounds (`Hold` 0: a fixed lease).
                let watch = match nums.get(Slot::Hold) {
                    0.0 => None,
                    _ => Some(watch_of(nums)?),
                };
                let replicas = options::replicas(nums)?;
                if replicas.is_some() && aux.is_empty() {
                    return Err(Error::InvalidArgument(
                        "replicas: a tryLock needs its undo latch".into(),
                    ));
                }
                Op::TryLock {
                    wait,
                    watch,
                    replicas,
                    undo: aux,
                }
            }
            RedissonOp::Unlock => Op::Unlock { latch: aux },
            RedissonOp::ForceUnlock => Op::ForceUnlock,
            RedissonOp::IsLocked => Op::IsLocked,
        };
        Ok(Request {
            op,
            name,
            channel,
            field,
            lease_ms,
            adapter,
            flavor,
        })
    }
}

/// A Redisson operation on endpoint `endpoint`, on engine `E`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn redisson<E: Engine>(
    endpoint: u32,
    op: RedissonOp,
    name: String,
    channel: String,
    field: String,
    aux: String,
    adapter: String,
    nums: &[f64],
) -> impl Future<Output = Result<Reply>> {
    // The numbers are read now: the typed array is JavaScript's, for this call only.
    let nums = Nums::new(nums);
    async move {
        // (The numbers are not kept past the parse: they would be stored
        // in this future.)
        let req = Request::parse(op, name, channel, field, aux, &adapter, &nums?)?;
        let target = target(endpoint)?;
        // As for lockx: a replica-acknowledged tryLock on a lane.
        let route = match req.acknowledged() {
            true => E::lane(endpoint, &target),
            false => E::shared(endpoint)?,
        };
        run(req, target, || E::connect(&route), E::timer()).await
    }
}

/// Runs `req` against `target` over a connection from `connect` (called
/// again only for an unlock's retry, after the first connection failed).
/// Replies: `Yes` held / unlocked (still held) / deleted / locked, `No`
/// not, `With(Released)` an unlock that released the last hold.
async fn run<C, F, Fut>(
    req: Request,
    target: Arc<Target>,
    connect: F,
    timer: &dyn Timer,
) -> Result<Reply>
where
    C: ConnectionLike,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let mut conn = connect().await?;
    let conn = &mut conn;
    match req.op {
        Op::TryLock {
            wait,
            ref watch,
            replicas,
            ref undo,
        } => {
            if let Some(want) = replicas {
                // More replicas than the primary has: refused before any write.
                replicas::check_available(conn, want, &req.name).await?;
            }
            let wakeups = match wait {
                Wait::Once => None,
                _ => Some(wakeups(&target, req.adapter)?),
            };
            let held = reentrant::try_lock(
                conn,
                timer,
                wakeups.as_ref(),
                &req.name,
                &req.channel,
                &req.field,
                req.lease_ms,
                wait,
                req.flavor,
            )
            .await?;
            if let (Some(_), Some(want)) = (held, replicas) {
                if let Err(e) = replicas::wait_for(conn, want).await {
                    // Not acknowledged: give this hold back (one hold fewer,
                    // as an unlock; the last one wakes the waiters).
                    let undone = unlock_under(conn, &connect, &target, &req, undo).await;
                    if let Ok(Unlocked::Released) = undone {
                        wake(&target, &req);
                    }
                    return Err(e);
                }
            }
            if let (Some(_), Some(w)) = (held, watch) {
                let h = req.held(&target);
                let renewal = reentrant::Kept {
                    server: Arc::clone(&target.shared),
                    name: h.name.clone(),
                    holder: h.owner.clone(),
                    read: req.flavor == Flavor::Read,
                };
                let granted = std::time::Instant::now();
                let until = granted + Duration::from_millis(req.lease_ms);
                hold::keep(rt()?, renewal, h, req.lease_ms, granted, until, w.clone());
            }
            Ok(Reply::from(held))
        }
        Op::Unlock { ref latch } => {
            // Named only when something is kept at all (most leases are fixed).
            let kept = (!keeper::idle()).then(|| req.held(&target));
            let pause = hold::pause(kept).await;
            let unlocked = unlock_under(conn, &connect, &target, &req, latch).await;
            pause.released(&unlocked, || wake(&target, &req));
            Ok(match unlocked? {
                Unlocked::NotHeld => Reply::No,
                Unlocked::Decremented => Reply::Yes,
                Unlocked::Released => Reply::With(Value::Released),
            })
        }
        Op::ForceUnlock => {
            let shared = Arc::clone(&target.shared);
            let name = req.name.clone();
            keeper::stop_where(|h| h.same_lock(&shared, &name));
            let deleted =
                reentrant::force_unlock(conn, &req.name, &req.channel, req.adapter, req.flavor)
                    .await?;
            if let (true, Some(channel)) = (deleted, req.flavor.poke_channel(&req.channel)) {
                poke(&target, req.adapter, channel);
            }
            Ok(Reply::from(deleted))
        }
        Op::IsLocked => Ok(Reply::from(
            reentrant::is_locked(conn, &req.name, req.flavor).await?,
        )),
    }
}

/// A released lock's waiters of this process try at once.
fn wake(target: &Target, req: &Request) {
    if let Some(channel) = req.flavor.poke_channel(&req.channel) {
        poke(target, req.adapter, channel);
    }
}

/// One hold fewer for `req.field` under unlock latch `latch` (an unlock, or
/// an unacknowledged grant given back).
async fn unlock_under<C, F, Fut>(
    conn: &mut C,
    connect: &F,
    target: &Target,
    req: &Request,
    latch: &str,
) -> Result<Unlocked>
where
    C: ConnectionLike,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let keys = UnlockKeys {
        name: &req.name,
        channel: &req.channel,
        latch,
        adapter: req.adapter,
        flavor: req.flavor,
    };
    let latch_ms = reentrant::latch_ms(target.endpoint.command_timeout);
    reentrant::unlock(conn, connect, &keys, &req.field, req.lease_ms, latch_ms).await
}

/// Stops the renewals of every lock whose holder field starts with
/// `prefix` (`<instance id>:`): `Redisson.quit()`.
pub(crate) fn stop_renewals(prefix: &str) {
    keeper::stop_where(|h| h.owner.starts_with(prefix));
}
