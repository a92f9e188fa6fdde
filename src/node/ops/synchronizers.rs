//! Java Redisson's synchronizers on the Redisson face (RSemaphore,
//! RPermitExpirableSemaphore, RCountDownLatch), as both engines run them:
//! one [`Request`] from JavaScript's arguments, one [`run`] over whatever
//! connection and timer the engine has (locks/synchronizers.rs does the
//! rest). Waits subscribe to the object's channel through the target's
//! pub/sub wake-ups; a release or a count down made here also wakes a
//! waiter of this process at once (`poke`).

use std::future::Future;
use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::limits::{check_not_empty, not_whole_ms, positive_int};
use crate::locks::reentrant::Wait;
use crate::locks::synchronizers::{self as sync, wall_ms, Names};
use crate::node::engine::contract::Engine;
use crate::node::targets::{target, Target};
use crate::node::wake::{poke, wakeups};
use crate::node::wire::codes::SyncOp;
use crate::node::wire::done::{Reply, Value};
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Source;

/// What the operation needs beyond its names.
pub(crate) struct Request {
    op: SyncOp,
    name: String,
    channel: String,
    timeout: String,
    /// `Permits`: a count (permits, a latch's count; 0 when unused).
    count: i64,
    /// A permit id's 16 bytes (permit operations).
    id: Vec<u8>,
    /// `Time` (ms; 0: none): a permit's lease, or the count's time to live
    /// (`SemTrySetPermits`).
    lease: Option<Duration>,
    wait: Wait,
}

/// A count from JavaScript: an integer within Java's `int` (`long` for a
/// latch), not below `min`.
fn count(x: f64, min: i64, max: i64, what: &str) -> Result<i64> {
    if x.is_finite() && x.fract() == 0.0 && x >= min as f64 && x <= max as f64 {
        return Ok(x as i64);
    }
    Err(Error::InvalidArgument(format!(
        "Invalid {what} {x}: expected an integer from {min} to {max}"
    )))
}

const INT_MAX: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;
/// JavaScript's safe integers.
const SAFE_MAX: i64 = (1 << 53) - 1;

impl Request {
    /// From JavaScript's arguments: the object's `name`, its `channel`, the
    /// permit semaphore's `timeout` set (else empty), `arg` a permit id (32
    /// hex digits; else empty); the numbers (by [`Slot`]): `Permits` the
    /// permits or count, `Time` a permit's lease or the count's time to
    /// live in ms (0: none), `WaitMs` (0: one attempt, -1: forever).
    pub(crate) fn parse(
        op: SyncOp,
        name: String,
        channel: String,
        timeout: String,
        arg: &str,
        nums: &Nums,
    ) -> Result<Request> {
        check_not_empty("name", &name)?;
        let n = nums.get(Slot::Permits);
        let count = match op {
            SyncOp::SemTrySetPermits | SyncOp::PesTrySetPermits | SyncOp::PesSetPermits => {
                count(n, 0, INT_MAX, "permits")?
            }
            SyncOp::SemAcquire | SyncOp::SemRelease | SyncOp::SemReleaseIfExists => {
                count(n, 1, INT_MAX, "permits")?
            }
            SyncOp::SemAddPermits | SyncOp::PesAddPermits => count(n, INT_MIN, INT_MAX, "permits")?,
            SyncOp::LatchTrySetCount => count(n, 0, SAFE_MAX, "count")?,
            _ => 0,
        };
        let permit_op = matches!(
            op,
            SyncOp::PesAcquire
                | SyncOp::PesTryRelease
                | SyncOp::PesUpdateLease
                | SyncOp::PesGetLeaseTime
        );
        let id = match permit_op {
            true => sync::permit_id(arg)?,
            false => Vec::new(),
        };
        if op.is_permit_semaphore() && timeout.is_empty() {
            return Err(Error::InvalidArgument(
                "a permit-expirable semaphore needs its timeout set's name".into(),
            ));
        }
        let what = match op {
            SyncOp::SemTrySetPermits => "ttl",
            _ => "leaseTime",
        };
        let lease = match nums.get(Slot::Time) {
            0.0 if op == SyncOp::PesUpdateLease => {
                return Err(Error::InvalidArgument(format!(
                    "Invalid {what} 0: expected a positive integer number of milliseconds"
                )))
            }
            0.0 => None,
            t => Some(Duration::from_millis(positive_int(t).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "Invalid {what} {t}: expected a positive integer number of milliseconds"
                ))
            })?)),
        };
        let w = nums.get(Slot::WaitMs);
        let wait = if w == -1.0 {
            Wait::Forever
        } else if w == 0.0 {
            Wait::Once
        } else if let Some(ms) = positive_int(w) {
            Wait::For(Duration::from_millis(ms))
        } else {
            return Err(not_whole_ms("waitTime", w));
        };
        Ok(Request {
            op,
            name,
            channel,
            timeout,
            count,
            id,
            lease,
            wait,
        })
    }

    fn names(&self) -> Names<'_> {
        Names {
            name: &self.name,
            channel: &self.channel,
            timeout: &self.timeout,
        }
    }
}

impl SyncOp {
    fn is_permit_semaphore(self) -> bool {
        matches!(
            self,
            SyncOp::PesTrySetPermits
                | SyncOp::PesAcquire
                | SyncOp::PesTryRelease
                | SyncOp::PesUpdateLease
                | SyncOp::PesAvailablePermits
                | SyncOp::PesAddPermits
                | SyncOp::PesGetPermits
                | SyncOp::PesAcquiredPermits
                | SyncOp::PesSetPermits
                | SyncOp::PesGetLeaseTime
        )
    }
}

/// A synchronizer operation on endpoint `endpoint`, on engine `E`.
pub(crate) fn rsync<E: Engine>(
    endpoint: u32,
    op: SyncOp,
    name: String,
    channel: String,
    timeout: String,
    arg: String,
    nums: &[f64],
) -> impl Future<Output = Result<Reply>> {
    // The numbers are read now: the typed array is JavaScript's, for this call only.
    let nums = Nums::new(nums);
    async move {
        let req = Request::parse(op, name, channel, timeout, &arg, &nums?)?;
        let target = target(endpoint)?;
        let route = E::shared(endpoint)?;
        let mut conn = E::connect(&route).await?;
        run(&req, &target, &mut conn, E::timer()).await
    }
}

/// Runs `req` against `target` over `conn`. Replies: `Yes`/`No` for the
/// operations that answer a boolean (and `Yes` for those that answer
/// nothing), `With(Count)` for the ones that answer a number.
async fn run<C: ConnectionLike>(
    req: &Request,
    target: &Target,
    conn: &mut C,
    timer: &dyn Timer,
) -> Result<Reply> {
    let names = req.names();
    let (name, channel) = (names.name, names.channel);
    let waits = |wait: Wait| match wait {
        Wait::Once => Ok(None),
        _ => wakeups(target, Source::PubSub).map(Some),
    };
    let released = || poke(target, Source::PubSub, channel);
    let number = |n: i64| Reply::With(Value::Count(n));
    Ok(match req.op {
        SyncOp::SemTrySetPermits | SyncOp::PesTrySetPermits => {
            // Only RSemaphore's has a time to live (JavaScript sends none for the other).
            let ttl = match req.op {
                SyncOp::SemTrySetPermits => req.lease,
                _ => None,
            };
            let set = sync::try_set_permits(conn, name, channel, req.count, ttl).await?;
            if set {
                released();
            }
            Reply::from(set)
        }
        SyncOp::SemAcquire => {
            let w = waits(req.wait)?;
            let got = sync::acquire(conn, timer, w.as_ref(), names, req.count, req.wait).await?;
            Reply::from(got)
        }
        SyncOp::SemRelease => {
            sync::release(conn, name, channel, req.count).await?;
            released();
            Reply::Yes
        }
        SyncOp::SemReleaseIfExists => {
            let done = sync::release_if_exists(conn, name, channel, req.count).await?;
            if done {
                released();
            }
            Reply::from(done)
        }
        SyncOp::SemAvailablePermits => number(sync::get_count(conn, name).await?),
        SyncOp::SemAddPermits => {
            sync::add_permits(conn, name, channel, req.count).await?;
            released();
            Reply::Yes
        }
        SyncOp::SemDrainPermits => number(sync::drain_permits(conn, name).await?),
        SyncOp::PesAcquire => {
            let w = waits(req.wait)?;
            let got =
                sync::acquire_permit(conn, timer, w.as_ref(), names, &req.id, req.lease, req.wait)
                    .await?;
            Reply::from(got)
        }
        SyncOp::PesTryRelease => {
            let ok = sync::try_release_permit(conn, names, &req.id, wall_ms()).await?;
            // Released or found expired: either way a permit went back.
            released();
            Reply::from(ok)
        }
        SyncOp::PesUpdateLease => {
            let now = wall_ms();
            let ms = req.lease.map_or(0, |d| d.as_millis() as i64);
            let date = now.saturating_add(ms);
            Reply::from(sync::update_lease(conn, names, &req.id, date, now).await?)
        }
        SyncOp::PesAvailablePermits => {
            number(sync::available_permits(conn, names, wall_ms()).await?)
        }
        SyncOp::PesGetPermits => number(sync::get_permits(conn, names, wall_ms()).await?),
        SyncOp::PesAcquiredPermits => number(sync::acquired_permits(conn, names, wall_ms()).await?),
        SyncOp::PesSetPermits => {
            sync::set_permits(conn, names, req.count).await?;
            // Announced when it changed; at worst one extra attempt here.
            released();
            Reply::Yes
        }
        SyncOp::PesGetLeaseTime => match sync::lease_time(conn, names, &req.id, wall_ms()).await? {
            Some(ms) => number(ms),
            None => Reply::No,
        },
        SyncOp::PesAddPermits => {
            sync::add_expirable_permits(conn, name, channel, req.count).await?;
            if req.count > 0 {
                released();
            }
            Reply::Yes
        }
        SyncOp::LatchTrySetCount => {
            Reply::from(sync::try_set_count(conn, name, channel, req.count).await?)
        }
        SyncOp::LatchCountDown => {
            sync::count_down(conn, name, channel).await?;
            // At worst one extra read by a waiter here, if the count is not
            // zero yet.
            released();
            Reply::Yes
        }
        SyncOp::LatchGetCount => number(sync::get_count(conn, name).await?),
        SyncOp::LatchAwait => {
            let w = waits(req.wait)?;
            Reply::from(sync::await_zero(conn, timer, w.as_ref(), names, req.wait).await?)
        }
    })
}
