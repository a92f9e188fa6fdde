//! redis-semaphore's operations (`require('redislock-rs/semaphore')`), as
//! both engines run them: a mutex, semaphore or multi-semaphore (by the
//! `Limit` and `Permits` numbers) on one server, over whatever connection
//! and timer the engine has (locks/semaphore.rs does the rest).

use std::future::Future;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::keeper::{self, Held, Kind as Keep, Servers};
use crate::limits;
use crate::locks::semaphore::{self, Holder, Kind, Waiting};
use crate::node::cancels::cancel_slot_of;
use crate::node::engine::contract::Engine;
use crate::node::envs::watch;
use crate::node::runtime::rt;
use crate::node::targets::target;
use crate::node::wire::codes::{Flag, LockOp};
use crate::node::wire::done::Reply;
use crate::node::wire::nums::{Nums, Slot};

fn int_u32(x: f64, what: &str) -> Result<u32> {
    limits::whole_u32(x).ok_or_else(|| {
        Error::InvalidArgument(format!("Invalid {what} {x}: expected a whole number"))
    })
}

/// A redis-semaphore operation on `endpoint`: the lock at `key` (as Redis
/// names it, `mutex:…` or `semaphore:…`) for holder `identifier`. The
/// numbers (by [`Slot`]): `Limit` and `Permits` (the kind: see
/// `semaphore::Kind::new`), `Time` (`lockTimeout`, ms); an acquire's
/// `Attempts` (-1: no limit), `WaitMs` (`acquireTimeout`; -1: none),
/// `Delay` (`retryInterval`) and `Cancel`; `Flags` (KEEP: the lease keeper
/// refreshes a granted lock until it is released, bounded by `Hold`,
/// `Env`, `MaxLagMs` and `MaxHoldMs`). EXTEND refreshes once (an
/// `acquiredExternally` lock's first acquire; with KEEP it is then kept).
/// Replies `Yes` (granted, refreshed, released) or `No`.
pub(crate) fn semaphore<E: Engine>(
    endpoint: u32,
    op: LockOp,
    key: String,
    identifier: String,
    nums: Vec<f64>,
) -> impl Future<Output = Result<Reply>> {
    let nums = Nums::new(nums);
    let cancel = nums.as_ref().ok().and_then(cancel_slot_of);
    async move {
        let nums = nums?;
        let kind = Kind::new(
            int_u32(nums.get(Slot::Limit), "limit")?,
            int_u32(nums.get(Slot::Permits), "permits")?,
        )?;
        let ttl_ms = limits::positive_int(nums.get(Slot::Time))
            .ok_or_else(|| limits::invalid_timeout(nums.get(Slot::Time)))?;
        let flags = int_u32(nums.get(Slot::Flags), "flags")?;
        let target = target(endpoint)?;
        let route = E::shared(endpoint)?;
        let mut conn = E::connect(&route).await?;
        let holder = Holder {
            key: &key,
            identifier: &identifier,
            ttl_ms,
        };
        let held = || Held::new(&target.shared, &key, &identifier, Keep::Semaphore(kind));
        let keep = |sent: Instant| -> Result<()> {
            let w = watch(
                int_u32(nums.get(Slot::Env), "env")?,
                int_u32(nums.get(Slot::Hold), "hold")?,
                limits::positive_int(nums.get(Slot::MaxLagMs)).unwrap_or(30_000),
                limits::positive_int(nums.get(Slot::MaxHoldMs)).unwrap_or(0),
            )?;
            let one = Servers::One(std::sync::Arc::clone(&target.shared));
            let until = sent + Duration::from_millis(ttl_ms);
            keeper::start(rt()?, one, held(), ttl_ms, sent, until, Some(w));
            Ok(())
        };
        let kept = Flag::Keep.in_bits(flags);
        match op {
            LockOp::Acquire => {
                let attempts = match nums.get(Slot::Attempts) {
                    a if a < 0.0 => None,
                    a => Some(
                        limits::whole_ms(a)
                            .ok_or_else(|| limits::not_whole_ms("acquireAttemptsLimit", a))?,
                    ),
                };
                let timeout = match nums.get(Slot::WaitMs) {
                    t if t < 0.0 => Duration::MAX,
                    t => Duration::from_millis(
                        limits::whole_ms(t)
                            .ok_or_else(|| limits::not_whole_ms("acquireTimeout", t))?,
                    ),
                };
                let retry_interval = limits::whole_ms(nums.get(Slot::Delay))
                    .ok_or_else(|| limits::not_whole_ms("retryInterval", nums.get(Slot::Delay)))?;
                let waiting = Waiting {
                    attempts,
                    timeout,
                    retry_interval: Duration::from_millis(retry_interval),
                };
                let stop = cancel.as_ref().map(|c| c.cancel());
                let sent = Instant::now();
                let got =
                    semaphore::acquire(&mut conn, E::timer(), kind, holder, waiting, stop).await?;
                if got.granted && kept {
                    keep(sent)?;
                }
                Ok(Reply::from(got.granted))
            }
            LockOp::Extend => {
                let sent = Instant::now();
                let refreshed = semaphore::refresh(&mut conn, kind, holder).await?;
                if refreshed && kept {
                    keep(sent)?;
                }
                Ok(Reply::from(refreshed))
            }
            LockOp::Release => {
                let paused = match kept {
                    true => keeper::pause(&held()).await,
                    false => None,
                };
                let released = semaphore::release(&mut conn, kind, holder).await;
                // Released, not held, or unknown: no refresh either way.
                if let Some(p) = paused {
                    p.stop();
                }
                Ok(Reply::from(released?))
            }
            LockOp::Inspect => Err(Error::InvalidArgument(
                "inspect() is not a redis-semaphore operation".into(),
            )),
        }
    }
}
