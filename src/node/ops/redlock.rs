//! node-redlock's operations (`require('redislock-rs/redlock')`), as both
//! engines run them: several resources on several servers by the scripts
//! registered as a set (src/node/scripts.rs), the report back as an object.

use std::future::Future;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::locks::quorum::Step;
use crate::locks::redlock::{self, RedlockOptions, Resources};
use crate::locks::token::AcquireOptions;
use crate::node::cancels::cancel_slot_of;
use crate::node::engine::contract::Engine;
use crate::node::ops::quorum::{encode, random, server_timeout};
use crate::node::scripts::scripts;
use crate::node::targets::targets;
use crate::node::wire::codes::LockOp;
use crate::node::wire::done::{Reply, Value};
use crate::node::wire::nums::{Nums, Slot};

/// The most random time added to a pause.
fn jitter(ms: f64) -> Result<Duration> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(Error::InvalidArgument(format!(
            "Invalid retryJitter {ms}: expected a non-negative number of milliseconds"
        )));
    }
    Ok(Duration::from_millis(ms.min(3_600_000.0) as u64))
}

/// A redlock operation on `endpoints` with script set `script_set`: the
/// resources `keys` (as Redis names them) and the lock's `value`. The
/// numbers (by [`Slot`]): an acquire's or extend's `Time` (TTL),
/// `Retries` (-1: until granted), `Delay`, `JitterMs` (up to this much
/// more per pause), `DriftFactor`, `ServerTimeoutMs` (0: the default),
/// `Env` and `Cancel` (an acquire's abort); a release's `Time` (the lock's
/// TTL, for the default server timeout), `ServerTimeoutMs` and its
/// `Retries`, `Delay` and `JitterMs` (node-redlock 5 retries releases). An
/// acquire's cancel slot is registered now, before it starts.
pub(crate) fn redlock<E: Engine>(
    endpoints: Vec<u32>,
    op: LockOp,
    script_set: u32,
    keys: Vec<String>,
    value: String,
    nums: Vec<f64>,
) -> impl Future<Output = Result<Reply>> {
    let nums = Nums::new(nums);
    let cancel = match (op, &nums) {
        (LockOp::Acquire, Ok(nums)) => cancel_slot_of(nums),
        _ => None,
    };
    async move {
        let nums = nums?;
        let scripts = scripts(script_set)?;
        let targets = targets(&endpoints)?;
        let routes = endpoints
            .iter()
            .map(|e| E::shared(*e))
            .collect::<Result<Vec<_>>>()?;
        let connect = |i: usize| E::connect(&routes[i]);
        let (n, timer) = (targets.len(), E::timer());
        let res = Resources {
            keys: &keys,
            value: &value,
        };
        let (report, step) = match op {
            LockOp::Acquire | LockOp::Extend => {
                let base = AcquireOptions::from_numbers(
                    nums.get(Slot::Time),
                    nums.get(Slot::Retries),
                    nums.get(Slot::Delay),
                )?;
                let opts = RedlockOptions {
                    ttl_ms: base.ttl_ms,
                    retries: base.retries,
                    delay: base.delay,
                    jitter: jitter(nums.get(Slot::JitterMs))?,
                    server_timeout: server_timeout(
                        nums.get(Slot::ServerTimeoutMs),
                        base.ttl_ms,
                        &targets,
                    )?,
                    drift_factor: nums.get(Slot::DriftFactor),
                };
                match op {
                    LockOp::Acquire => {
                        let stop = cancel.as_ref().map(|c| c.cancel());
                        let r = redlock::acquire(
                            n, connect, timer, &scripts, res, &opts, &random, stop,
                        )
                        .await?;
                        (r, Step::Acquire)
                    }
                    _ => {
                        let r = redlock::extend(n, connect, timer, &scripts, res, &opts, &random)
                            .await?;
                        (r, Step::Extend)
                    }
                }
            }
            LockOp::Release => {
                let ttl = crate::limits::positive_int(nums.get(Slot::Time)).unwrap_or(10_000);
                // A release has no TTL of its own: 1 ms stands in (unused).
                let schedule = AcquireOptions::from_numbers(
                    1.0,
                    nums.get(Slot::Retries),
                    nums.get(Slot::Delay),
                )?;
                let opts = RedlockOptions {
                    ttl_ms: 1,
                    retries: schedule.retries,
                    delay: schedule.delay,
                    jitter: jitter(nums.get(Slot::JitterMs))?,
                    server_timeout: server_timeout(nums.get(Slot::ServerTimeoutMs), ttl, &targets)?,
                    drift_factor: 0.0,
                };
                let r = redlock::release(n, connect, timer, &scripts, res, &opts, &random).await?;
                (r, Step::Release)
            }
            LockOp::Inspect => {
                return Err(Error::InvalidArgument(
                    "inspect() is not a redlock operation".into(),
                ))
            }
        };
        Ok(Reply::With(Value::Report(encode(&report, step))))
    }
}
