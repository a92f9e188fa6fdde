//! Redlock operations (`createLock([a, b, c], …)`), as both engines run
//! them: the arguments from JavaScript, one [`run`] over a connection per
//! server, the report back as an object (see [`encode`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::hold::{self, Extension};
use crate::keeper::Held;
use crate::limits;
use crate::locks::keys::{companion, RELEASED_SUFFIX};
use crate::locks::quorum::{self, Outcome, QuorumOptions, Report, Step};
use crate::locks::token::{self, AcquireOptions};
use crate::node::cancels::{acquire_slot, CancelSlot};
use crate::node::engine::contract::Engine;
use crate::node::envs::watch_of;
use crate::node::runtime::rt;
use crate::node::targets::{targets, Target};
use crate::node::wake::{poke, wakeups};
use crate::node::wire::codes::{Flag, LockOp};
use crate::node::wire::done::{QuorumReport, Reply, ServerFailure, ServerVote, Value};
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Source;

/// The release channel of `key` (as for one server: ops/lockx.rs).
pub(crate) fn channel(key: &str) -> Result<String> {
    companion(key, RELEASED_SUFFIX, "release channel")
}

/// The keeper's name for a quorum lock: its key and token on the first
/// server (tokens are one lock object's own, so this names no other lock).
fn held(targets: &[Arc<Target>], key: &str, token: &str) -> Result<Held> {
    let first = targets
        .first()
        .ok_or_else(|| Error::InvalidArgument("a quorum lock needs at least one server".into()))?;
    Ok(Held::new(&first.shared, key, token, token::KEPT))
}

fn bits(x: f64) -> Result<u32> {
    limits::whole_u32(x)
        .ok_or_else(|| Error::InvalidArgument("invalid lock operation arguments".into()))
}

/// The server timeout: `requested` ms (0: the default, `max(50, ttl /
/// 100)`), never above any server's command timeout.
pub(crate) fn server_timeout(
    requested: f64,
    ttl_ms: u64,
    targets: &[Arc<Target>],
) -> Result<Duration> {
    let ms = if requested == 0.0 {
        (ttl_ms / 100).max(50)
    } else if requested.is_finite() && requested >= 1.0 && requested.fract() == 0.0 {
        requested.min(u32::MAX as f64) as u64
    } else {
        return Err(limits::not_positive_ms("serverTimeout", requested));
    };
    let cap = targets
        .iter()
        .map(|t| t.endpoint.command_timeout)
        .min()
        .unwrap_or(Duration::from_millis(ms));
    Ok(Duration::from_millis(ms).min(cap))
}

/// The most random time added to a pause between attempts (`retryJitter`).
pub(crate) fn jitter(ms: f64) -> Result<Duration> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(Error::InvalidArgument(format!(
            "Invalid retryJitter {ms}: expected a non-negative number of milliseconds"
        )));
    }
    Ok(Duration::from_millis(ms.min(3_600_000.0) as u64))
}

/// A number in 0..1 for the retry jitter.
pub(crate) fn random() -> f64 {
    (uuid::Uuid::new_v4().as_u128() >> 75) as f64 / (1u64 << 53) as f64
}

/// A Redlock operation on `endpoints`, on engine `E`: an acquire's cancel
/// slot is registered now, before the operation starts, so that a cancel
/// right after the call is never lost. Every server's command goes out at
/// once.
pub(crate) fn quorum<E: Engine>(
    endpoints: &[u32],
    op: LockOp,
    key: String,
    token: String,
    nums: &[f64],
) -> impl Future<Output = Result<Reply>> {
    let nums = Nums::new(nums);
    // A Uint32Array read in place, copied for the operation.
    let endpoints = endpoints.to_vec();
    let cancel = acquire_slot(op, &nums);
    async move {
        let targets = targets(&endpoints)?;
        let routes = E::shared_all(&endpoints)?;
        let connect = |i: usize| E::connect(&routes[i]);
        run(
            op,
            targets,
            connect,
            E::timer(),
            &key,
            &token,
            &nums?,
            cancel,
        )
        .await
    }
}

/// Runs operation `op` on `targets` (connections from `connect(i)`).
/// The numbers (by [`Slot`]): an acquire's `Time` (TTL), `Retries`,
/// `Delay`, `ServerTimeoutMs`, `JitterMs`, `Flags`, `Hold`, `Env`,
/// `MaxLagMs`, `MaxHoldMs`, `Cancel`; an extend's `Time` (the new TTL),
/// `ServerTimeoutMs`, `Flags`; a release's `Time` (the lock's TTL, for the
/// default server timeout), `ServerTimeoutMs`, `Flags`. With the KEEP flag
/// an acquired lock's lease is renewed on a majority by the keeper (hold,
/// env and the bounds as for lockx), until released. `cancel` is the
/// acquire's slot.
#[allow(clippy::too_many_arguments)]
async fn run<C, F, Fut>(
    op: LockOp,
    targets: Vec<Arc<Target>>,
    connect: F,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    nums: &Nums,
    cancel: Option<CancelSlot>,
) -> Result<Reply>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let num = |slot: Slot| nums.get(slot);
    let n = targets.len();
    let (step, report) = match op {
        LockOp::Acquire => {
            let base = AcquireOptions::from_numbers(
                num(Slot::Time),
                num(Slot::Retries),
                num(Slot::Delay),
            )?;
            let opts = QuorumOptions {
                ttl_ms: base.ttl_ms,
                retries: base.retries,
                delay: base.delay,
                server_timeout: server_timeout(num(Slot::ServerTimeoutMs), base.ttl_ms, &targets)?,
                jitter: jitter(num(Slot::JitterMs))?,
            };
            let flags = bits(num(Slot::Flags))?;
            let keep = Flag::Keep.in_bits(flags);
            // Waiters only: one attempt never waits.
            let waits = !matches!(opts.retries, crate::waiting::retry::Retries::Count(0));
            let (sources, channel) = match Flag::Wake.in_bits(flags) && waits {
                true => {
                    let sources = targets
                        .iter()
                        .map(|t| wakeups(t, Source::PubSub))
                        .collect::<Result<Vec<_>>>()?;
                    (sources, Some(channel(key)?))
                }
                false => (Vec::new(), None),
            };
            let channels: Vec<&str> = channel.as_deref().into_iter().collect();
            let wake = channel.is_some().then_some((&sources[..], &channels[..]));
            let watch = match keep {
                true => Some(watch_of(nums)?),
                false => None,
            };
            let stop = cancel.as_ref().map(CancelSlot::cancel);
            let report =
                quorum::acquire(n, connect, timer, key, token, &opts, &random, wake, stop).await?;
            if let (true, Some(w)) = (report.granted, watch) {
                let renewal = quorum::Kept {
                    servers: targets.iter().map(|t| Arc::clone(&t.shared)).collect(),
                    within: opts.server_timeout,
                    key: key.to_string(),
                    token: token.to_string(),
                };
                let (ttl, sent) = (opts.ttl_ms, report.started);
                let until = report.valid_until(ttl);
                hold::keep(
                    rt()?,
                    renewal,
                    held(&targets, key, token)?,
                    ttl,
                    sent,
                    until,
                    w,
                );
            }
            (Step::Acquire, report)
        }
        LockOp::Extend => {
            let ms = limits::extension_from_number(num(Slot::Time))?;
            let within = server_timeout(num(Slot::ServerTimeoutMs), ms, &targets)?;
            let kept = match Flag::Keep.in_bits(bits(num(Slot::Flags))?) {
                true => Some(held(&targets, key, token)?),
                false => None,
            };
            let extend = quorum::extend(n, connect, timer, key, token, ms, within);
            let judge = |outcome: &Result<Report>| match outcome {
                Ok(r) if r.granted => Extension::Confirmed {
                    lease_ms: ms,
                    until: r.valid_until(ms),
                },
                Ok(_) => Extension::Lost,
                Err(_) => Extension::Unknown,
            };
            (Step::Extend, hold::extend(kept, extend, judge).await?)
        }
        LockOp::Release => {
            let ttl = limits::positive_int(num(Slot::Time)).unwrap_or(10_000);
            let within = server_timeout(num(Slot::ServerTimeoutMs), ttl, &targets)?;
            let flags = bits(num(Slot::Flags))?;
            let kept = match Flag::Keep.in_bits(flags) {
                true => Some(held(&targets, key, token)?),
                false => None,
            };
            let announce = Flag::Wake
                .in_bits(flags)
                .then(|| channel(key))
                .transpose()?;
            let release =
                quorum::release(n, connect, timer, key, token, within, announce.as_deref());
            // Waiters of this process need not wait for Redis's word.
            let wake = || {
                if let Some(c) = &announce {
                    for t in &targets {
                        poke(t, Source::PubSub, c);
                    }
                }
            };
            (Step::Release, hold::release(kept, release, wake).await?)
        }
        LockOp::Inspect => {
            return Err(Error::InvalidArgument(
                "inspect() takes one server, not a quorum".into(),
            ))
        }
    };
    Ok(Reply::With(Value::Report(encode(&report, step))))
}

/// The report as JavaScript reads it (lib/redislock/quorum.js).
pub(crate) fn encode(report: &Report, step: Step) -> QuorumReport {
    let votes = |outcomes: &[Outcome]| {
        outcomes
            .iter()
            .map(|o| ServerVote {
                outcome: o.name(step).to_string(),
                error: o.message().map(str::to_string),
            })
            .collect::<Vec<_>>()
    };
    QuorumReport {
        granted: report.granted,
        validity_ms: report.validity_ms as f64,
        attempts: report.attempts as f64,
        quorum: u32::try_from(quorum::majority(report.outcomes.len())).unwrap_or(u32::MAX),
        servers: votes(&report.outcomes),
        rounds: report.rounds.iter().map(|r| votes(r)).collect(),
        failures: report
            .failures
            .iter()
            .map(|(i, o)| ServerFailure {
                server: u32::try_from(*i).unwrap_or(u32::MAX),
                outcome: o.name(step).to_string(),
                error: o.message().map(str::to_string),
            })
            .collect(),
        age_ms: report.started.elapsed().as_secs_f64() * 1000.0,
    }
}
