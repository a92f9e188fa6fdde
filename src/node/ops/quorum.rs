//! Redlock operations (`createLock([a, b, c], …)`), as both engines run
//! them: the arguments from JavaScript, one [`run`] over a connection per
//! server, the report back as an object (see [`encode`]).

use std::future::Future;
use std::sync::Arc;

use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::hold::{self, Extension};
use crate::keeper::Held;
use crate::limits;
use crate::locks::fanout::Step;
use crate::locks::keys::release_channel;
use crate::locks::quorum::{self, QuorumOptions};
use crate::locks::token;
use crate::node::cancels::{acquire_slot, CancelSlot};
use crate::node::engine::contract::Engine;
use crate::node::envs::watch_of;
use crate::node::options;
use crate::node::runtime::rt;
use crate::node::targets::{targets, Target};
use crate::node::wake::{poke, wakeups};
use crate::node::wire::codes::{Flag, LockOp};
use crate::node::wire::done::{QuorumReport, Reply, Value};
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Source;

/// The keeper's name for a quorum lock: its key and token on the first
/// server (tokens are one lock object's own, so this names no other lock).
fn held(targets: &[Arc<Target>], key: &str, token: &str) -> Result<Held> {
    let first = targets
        .first()
        .ok_or_else(|| Error::InvalidArgument("a quorum lock needs at least one server".into()))?;
    Ok(Held::new(&first.shared, key, token, token::KEPT))
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
    let dialect = &|i: usize| targets[i].shared.dialect();
    let (step, report) = match op {
        LockOp::Acquire => {
            let base = options::acquire(nums)?;
            let opts = QuorumOptions {
                ttl_ms: base.ttl_ms,
                retries: base.retries,
                delay: base.delay,
                server_timeout: options::server_timeout(
                    num(Slot::ServerTimeoutMs),
                    base.ttl_ms,
                    &targets,
                )?,
                jitter: options::jitter(nums)?,
            };
            let flags = options::flags(nums)?;
            let keep = Flag::Keep.in_bits(flags);
            // Waiters only: one attempt never waits.
            let waits = !matches!(opts.retries, crate::waiting::retry::Retries::Count(0));
            let (sources, channel) = match Flag::Wake.in_bits(flags) && waits {
                true => {
                    let sources = targets
                        .iter()
                        .map(|t| wakeups(t, Source::PubSub))
                        .collect::<Result<Vec<_>>>()?;
                    (sources, Some(release_channel(key)?))
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
            let report = quorum::acquire(
                n,
                connect,
                dialect,
                timer,
                key,
                token,
                &opts,
                &options::random,
                wake,
                stop,
            )
            .await?;
            if let (true, Some(w)) = (report.granted, watch) {
                let renewal = quorum::Kept {
                    servers: targets.iter().map(|t| Arc::clone(&t.shared)).collect(),
                    within: opts.server_timeout,
                    key: key.to_string(),
                    token: token.to_string(),
                };
                let (ttl, sent) = (opts.ttl_ms, report.started);
                let until = report.valid_until(ttl, quorum::DRIFT_FACTOR);
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
            let within = options::server_timeout(num(Slot::ServerTimeoutMs), ms, &targets)?;
            let kept = match Flag::Keep.in_bits(options::flags(nums)?) {
                true => Some(held(&targets, key, token)?),
                false => None,
            };
            let pause = hold::pause(kept).await;
            let extended = quorum::extend(n, connect, dialect, timer, key, token, ms, within).await;
            pause.extended(match &extended {
                Ok(r) if r.granted => Extension::Confirmed {
                    lease_ms: ms,
                    until: r.valid_until(ms, quorum::DRIFT_FACTOR),
                },
                Ok(_) => Extension::Lost,
                Err(_) => Extension::Unknown,
            });
            (Step::Extend, extended?)
        }
        LockOp::Release => {
            let ttl = limits::positive_int(num(Slot::Time)).unwrap_or(10_000);
            let within = options::server_timeout(num(Slot::ServerTimeoutMs), ttl, &targets)?;
            let flags = options::flags(nums)?;
            let kept = match Flag::Keep.in_bits(flags) {
                true => Some(held(&targets, key, token)?),
                false => None,
            };
            let announce = Flag::Wake
                .in_bits(flags)
                .then(|| release_channel(key))
                .transpose()?;
            let pause = hold::pause(kept).await;
            let announced = announce.as_deref();
            let released =
                quorum::release(n, connect, dialect, timer, key, token, within, announced).await;
            // Waiters of this process need not wait for Redis's word.
            pause.released(&released, || {
                if let Some(c) = &announce {
                    for t in &targets {
                        poke(t, Source::PubSub, c);
                    }
                }
            });
            (Step::Release, released?)
        }
        LockOp::Inspect => {
            return Err(Error::InvalidArgument(
                "inspect() takes one server, not a quorum".into(),
            ))
        }
    };
    Ok(Reply::With(Value::Report(QuorumReport::of(&report, step))))
}
