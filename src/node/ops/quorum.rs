//! Redlock operations (`createLock([a, b, c], …)`), as both engines run
//! them: the arguments from JavaScript, one [`run`] over a connection per
//! server, the report back as text (see [`encode`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::keeper::{self, Held, Kind, Servers};
use crate::limits;
use crate::locks::keys::{companion, RELEASED_SUFFIX};
use crate::locks::quorum::{self, QuorumOptions, Report, Step};
use crate::locks::token::AcquireOptions;
use crate::node::cancels::{cancel_slot_at, CancelSlot};
use crate::node::envs::watch;
use crate::node::runtime::rt;
use crate::node::targets::Target;
use crate::node::wake::{poke, wakeups};
use crate::node::wire::codes::bits::{KEEP, WAKE};
use crate::node::wire::codes::quorum::{ACQUIRE, EXTEND, RELEASE};
use crate::node::wire::done::Reply;
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Source;

/// The release channel of `key` (as for one server: ops/lockx.rs).
fn channel(key: &str) -> Result<String> {
    companion(key, RELEASED_SUFFIX, "release channel")
}

/// The keeper's name for a quorum lock: its key and token on the first
/// server (tokens are one lock object's own, so this names no other lock).
fn held(targets: &[Arc<Target>], key: &str, token: &str) -> Result<Held> {
    let first = targets
        .first()
        .ok_or_else(|| Error::InvalidArgument("a quorum lock needs at least one server".into()))?;
    Ok(Held::new(&first.shared, key, token, Kind::Token))
}

fn bits(x: f64) -> Result<u32> {
    limits::whole_u32(x)
        .ok_or_else(|| Error::InvalidArgument("invalid lock operation arguments".into()))
}

/// The server timeout: `requested` ms (0: the default, `max(50, ttl /
/// 100)`), never above any server's command timeout.
fn server_timeout(requested: f64, ttl_ms: u64, targets: &[Arc<Target>]) -> Result<Duration> {
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

/// A number in 0..1 for the retry jitter.
fn random() -> f64 {
    (uuid::Uuid::new_v4().as_u128() >> 75) as f64 / (1u64 << 53) as f64
}

/// Runs operation `op` on `targets` (connections from `connect(i)`).
/// `nums`: ACQUIRE `[ttl, retries, delay, serverTimeout, jitter, flags,
/// hold, env, maxLagMs, maxHoldMs, cancelId]`, EXTEND `[ms, serverTimeout, flags]`,
/// RELEASE `[ttl, serverTimeout, flags]` (0: default; missing: 0). With the
/// KEEP flag an acquired lock's lease is renewed on a majority by the
/// keeper (hold, env and the bounds as for lockx), until released. `cancel`
/// is the acquire's slot ([`cancel_slot`], made before the call).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run<C, F, Fut>(
    op: u32,
    targets: Vec<Arc<Target>>,
    connect: F,
    timer: &dyn Timer,
    key: &str,
    token: &str,
    nums: &[f64],
    cancel: Option<CancelSlot>,
) -> Result<Reply>
where
    C: ConnectionLike,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let num = |i: usize| nums.get(i).copied().unwrap_or(0.0);
    let n = targets.len();
    let (step, report) = match op {
        ACQUIRE => {
            let base = AcquireOptions::from_numbers(num(0), num(1), num(2))?;
            let jitter = num(4);
            if !(jitter.is_finite() && jitter >= 0.0) {
                return Err(Error::InvalidArgument(format!(
                    "Invalid retryJitter {jitter}: expected a non-negative number of milliseconds"
                )));
            }
            let opts = QuorumOptions {
                ttl_ms: base.ttl_ms,
                retries: base.retries,
                delay: base.delay,
                server_timeout: server_timeout(num(3), base.ttl_ms, &targets)?,
                jitter: Duration::from_millis(jitter.min(3_600_000.0) as u64),
            };
            let flags = bits(num(5))?;
            let keep = flags & KEEP != 0;
            // Waiters only: one attempt never waits.
            let waits = !matches!(opts.retries, crate::waiting::retry::Retries::Count(0));
            let (sources, channel) = match flags & WAKE != 0 && waits {
                true => {
                    let sources = targets
                        .iter()
                        .map(|t| wakeups(t, Source::PubSub))
                        .collect::<Result<Vec<_>>>()?;
                    (sources, Some(channel(key)?))
                }
                false => (Vec::new(), None),
            };
            let wake = channel.as_deref().map(|c| (&sources[..], c));
            let watch = match keep {
                true => Some(watch(
                    bits(num(7))?,
                    bits(num(6))?,
                    limits::positive_int(num(8)).unwrap_or(30_000),
                    limits::positive_int(num(9)).unwrap_or(0),
                )?),
                false => None,
            };
            let stop = cancel.as_ref().map(CancelSlot::cancel);
            let report =
                quorum::acquire(n, connect, timer, key, token, &opts, &random, wake, stop).await?;
            if let (true, Some(w)) = (report.granted, watch) {
                let servers = Servers::Quorum {
                    servers: targets.iter().map(|t| Arc::clone(&t.shared)).collect(),
                    within: opts.server_timeout,
                };
                let until = report.valid_until(opts.ttl_ms);
                let held = held(&targets, key, token)?;
                keeper::start(
                    rt()?,
                    servers,
                    held,
                    opts.ttl_ms,
                    report.started,
                    until,
                    Some(w),
                );
            }
            (Step::Acquire, report)
        }
        EXTEND => {
            let ms = limits::extension_from_number(num(0))?;
            let within = server_timeout(num(1), ms, &targets)?;
            let paused = match bits(num(2))? & KEEP {
                0 => None,
                _ => keeper::pause(&held(&targets, key, token)?).await,
            };
            let report = quorum::extend(n, connect, timer, key, token, ms, within).await?;
            if let Some(p) = paused {
                match report.granted {
                    true => p.extended(ms, report.valid_until(ms)),
                    false => p.stop(),
                }
            }
            (Step::Extend, report)
        }
        RELEASE => {
            let ttl = limits::positive_int(num(0)).unwrap_or(10_000);
            let within = server_timeout(num(1), ttl, &targets)?;
            let flags = bits(num(2))?;
            let paused = match flags & KEEP {
                0 => None,
                _ => keeper::pause(&held(&targets, key, token)?).await,
            };
            let announce = (flags & WAKE != 0).then(|| channel(key)).transpose()?;
            let report =
                quorum::release(n, connect, timer, key, token, within, announce.as_deref()).await;
            // Released, not ours, or unknown: no renewal either way.
            if let Some(p) = paused {
                p.stop();
            }
            let report = report?;
            if let (Some(c), true) = (&announce, report.granted) {
                // Waiters of this process need not wait for Redis's word.
                for t in &targets {
                    poke(t, Source::PubSub, c);
                }
            }
            (Step::Release, report)
        }
        other => {
            return Err(Error::InvalidArgument(format!(
                "unknown quorum operation {other}"
            )))
        }
    };
    Ok(Reply::With(encode(&report, step)))
}

/// The report as JavaScript reads it (lib/redislock/quorum.js): a first line
/// `<granted 0|1> <validity ms> <attempts>`, then one line per server,
/// `<outcome>` or `<outcome>\t<error message>` (tabs and newlines in the
/// message replaced by spaces).
fn encode(report: &Report, step: Step) -> String {
    let mut out = format!(
        "{} {} {}",
        u8::from(report.granted),
        report.validity_ms,
        report.attempts
    );
    for o in &report.outcomes {
        out.push('\n');
        out.push_str(o.name(step));
        if let Some(m) = o.message() {
            out.push('\t');
            out.extend(
                m.chars()
                    .map(|c| if c == '\n' || c == '\t' { ' ' } else { c }),
            );
        }
    }
    out
}

/// Registers an acquire's cancel id (`nums[10]`, environment `nums[7]`)
/// before it starts, as the redislock face's `cancel_slot` does.
pub(crate) fn cancel_slot(op: u32, nums: &[f64]) -> Option<CancelSlot> {
    (op == ACQUIRE)
        .then(|| cancel_slot_at(nums, 7, 10))
        .flatten()
}
