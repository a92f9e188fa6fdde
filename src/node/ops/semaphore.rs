//! redis-semaphore's operations (`require('redislock-rs/semaphore')`), as
//! both engines run them: a mutex, semaphore or multi-semaphore (by the
//! `Limit` and `Permits` numbers) on one server, over whatever connection
//! and timer the engine has (locks/semaphore.rs does the rest).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::hold;
use crate::keeper::Held;
use crate::limits;
use crate::locks::fanout::majority;
use crate::locks::keys::release_channel;
use crate::locks::semaphore::{self, Announce, Holder, Kind, Quorum, Refreshed, Waiting};
use crate::node::cancels::cancel_slot_of;
use crate::node::engine::contract::Engine;
use crate::node::envs::watch_of;
use crate::node::options;
use crate::node::runtime::rt;
use crate::node::targets::{target, targets, Target};
use crate::node::wake::{poke, wake_source, wakeups};
use crate::node::wire::codes::{Flag, LockOp};
use crate::node::wire::done::Reply;
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::wakeups::Source;

/// An acquire's wait: `Attempts` (-1: no limit), `WaitMs` (-1: none) and
/// `Delay`; `command_timeout` is the connection's bound on one reply.
fn waiting(nums: &Nums, command_timeout: Duration) -> Result<Waiting> {
    let attempts = match nums.get(Slot::Attempts) {
        a if a < 0.0 => None,
        a => Some(
            limits::whole_ms(a).ok_or_else(|| limits::not_whole_ms("acquireAttemptsLimit", a))?,
        ),
    };
    let timeout = match nums.get(Slot::WaitMs) {
        t if t < 0.0 => Duration::MAX,
        t => Duration::from_millis(
            limits::whole_ms(t).ok_or_else(|| limits::not_whole_ms("acquireTimeout", t))?,
        ),
    };
    let delay = nums.get(Slot::Delay);
    let retry_interval =
        limits::whole_ms(delay).ok_or_else(|| limits::not_whole_ms("retryInterval", delay))?;
    Ok(Waiting {
        attempts,
        timeout,
        retry_interval: Duration::from_millis(retry_interval),
        command_timeout,
    })
}

/// What both operations read off their numbers: the lock's kind and
/// lease, whether the keeper keeps it (KEEP), and its release channel
/// (WAKE: `wakeOnRelease`).
struct Parsed {
    kind: Kind,
    ttl_ms: u64,
    kept: bool,
    channel: Option<String>,
}

fn parse(nums: &Nums, key: &str) -> Result<Parsed> {
    let kind = Kind::new(
        options::count(nums.get(Slot::Limit), "limit")?,
        options::count(nums.get(Slot::Permits), "permits")?,
    )?;
    let ttl_ms = options::lease_ms(nums.get(Slot::Time))?;
    let flags = options::flags(nums)?;
    let channel = match Flag::Wake.in_bits(flags) {
        true => Some(release_channel(key)?),
        false => None,
    };
    Ok(Parsed {
        kind,
        ttl_ms,
        kept: Flag::Keep.in_bits(flags),
        channel,
    })
}

/// Hands a granted (or refreshed) lock, confirmed from `sent`, to the
/// lease keeper (`within`: on a quorum of `servers`, else on the one),
/// bounded as the numbers say.
fn keep(
    servers: &[Arc<Target>],
    within: Option<Duration>,
    kind: Kind,
    holder: Holder<'_>,
    sent: Instant,
    nums: &Nums,
) -> Result<()> {
    let first = servers.first().ok_or_else(|| {
        Error::InvalidArgument("a redis-semaphore lock needs at least one server".into())
    })?;
    let renewal = semaphore::Kept {
        servers: servers.iter().map(|t| Arc::clone(&t.shared)).collect(),
        within,
        kind,
        key: holder.key.to_string(),
        identifier: holder.identifier.to_string(),
    };
    let held = held(first, holder);
    let until = sent + Duration::from_millis(holder.ttl_ms);
    hold::keep(
        rt()?,
        renewal,
        held,
        holder.ttl_ms,
        sent,
        until,
        watch_of(nums)?,
    );
    Ok(())
}

/// The keeper's name for `holder`'s lock: on its first server.
fn held(first: &Target, holder: Holder<'_>) -> Held {
    Held::new(
        &first.shared,
        holder.key,
        holder.identifier,
        semaphore::KEPT,
    )
}

/// A redis-semaphore operation on `endpoint`: the lock at `key` (as Redis
/// names it, `mutex:…` or `semaphore:…`) for holder `identifier`. The
/// numbers (by [`Slot`]): `Limit` and `Permits` (the kind: see
/// `semaphore::Kind::new`), `Time` (`lockTimeout`, ms); an acquire's
/// `Attempts` (-1: no limit), `WaitMs` (`acquireTimeout`; -1: none),
/// `Delay` (`retryInterval`) and `Cancel`; `Flags` (KEEP: the lease keeper
/// refreshes a granted lock until it is released, bounded by `Hold`,
/// `Env`, `MaxLagMs` and `MaxHoldMs`; WAKE: `wakeOnRelease`, a release
/// announces on the key's channel and a waiting acquire listens). EXTEND refreshes once (an
/// `acquiredExternally` lock's first acquire; with KEEP it is then kept).
/// Replies `Yes` (granted, refreshed, released) or `No`.
pub(crate) fn semaphore<E: Engine>(
    endpoint: u32,
    op: LockOp,
    key: String,
    identifier: String,
    nums: &[f64],
) -> impl Future<Output = Result<Reply>> {
    let nums = Nums::new(nums);
    let cancel = nums.as_ref().ok().and_then(cancel_slot_of);
    async move {
        let nums = nums?;
        let Parsed {
            kind,
            ttl_ms,
            kept,
            channel,
        } = parse(&nums, &key)?;
        let target = target(endpoint)?;
        let route = E::shared(endpoint)?;
        let mut conn = E::connect(&route).await?;
        let holder = Holder {
            key: &key,
            identifier: &identifier,
            ttl_ms,
        };
        let one = std::slice::from_ref(&target);
        let keep = |sent| keep(one, None, kind, holder, sent, &nums);
        // `wakeOnRelease`: releases announce on the key's channel (sharded
        // on a Redis Cluster 7+), and a waiting acquire listens there.
        let source = match &channel {
            Some(_) if matches!(op, LockOp::Acquire | LockOp::Release) => {
                Some(wake_source(&target, &mut conn).await)
            }
            _ => None,
        };
        match op {
            LockOp::Acquire => {
                let waiting = waiting(&nums, target.endpoint.command_timeout)?;
                let stop = cancel.as_ref().map(|c| c.cancel());
                let subscriber = match (source, waiting.attempts) {
                    (Some(s), _) if waiting.may_wait() => Some(wakeups(&target, s)?),
                    _ => None,
                };
                let chans: Vec<&str> = channel.as_deref().into_iter().collect();
                let wake = subscriber
                    .as_ref()
                    .map(|w| (std::slice::from_ref(w), &chans[..]));
                let sent = Instant::now();
                let dialect = target.shared.dialect();
                let timer = E::timer();
                let got = semaphore::acquire(
                    &mut conn, dialect, timer, kind, holder, waiting, wake, stop,
                )
                .await?;
                if got.granted && kept {
                    keep(sent)?;
                }
                Ok(Reply::from(got.granted.then_some(got.attempts)))
            }
            LockOp::Extend => {
                let sent = Instant::now();
                let dialect = target.shared.dialect();
                let refreshed = semaphore::refresh(&mut conn, dialect, kind, holder).await?;
                if refreshed && kept {
                    keep(sent)?;
                }
                Ok(Reply::from(refreshed))
            }
            LockOp::Release => {
                let kept = kept.then(|| held(&target, holder));
                let announce = channel.as_deref().zip(source).map(|(c, s)| Announce {
                    channel: c,
                    publish: s.publish(),
                });
                let pause = hold::pause(kept).await;
                let dialect = target.shared.dialect();
                let released = semaphore::release(&mut conn, dialect, kind, holder, announce).await;
                // Waiters of this process need not wait for Redis's word.
                pause.released(&released, || {
                    if let Some((c, s)) = channel.as_deref().zip(source) {
                        poke(&target, s, c);
                    }
                });
                Ok(Reply::from(released?))
            }
            LockOp::Inspect => Err(Error::InvalidArgument(
                "inspect() is not a redis-semaphore operation".into(),
            )),
        }
    }
}

/// The same operations for the Redlock variants (`RedlockMutex`,
/// `RedlockSemaphore`, `RedlockMultiSemaphore`) on `endpoints`, each
/// server bounded by `ServerTimeoutMs` (0: the default): granted on a
/// quorum; a release answers `Yes` when a quorum gave its places back
/// (theirs never fails a release; neither does the face).
pub(crate) fn semaphores<E: Engine>(
    endpoints: &[u32],
    op: LockOp,
    key: String,
    identifier: String,
    nums: &[f64],
) -> impl Future<Output = Result<Reply>> {
    let nums = Nums::new(nums);
    // A Uint32Array read in place, copied for the operation.
    let endpoints = endpoints.to_vec();
    let cancel = nums.as_ref().ok().and_then(cancel_slot_of);
    async move {
        let nums = nums?;
        let Parsed {
            kind,
            ttl_ms,
            kept,
            channel,
        } = parse(&nums, &key)?;
        let targets = targets(&endpoints)?;
        let routes = E::shared_all(&endpoints)?;
        let connect = |i: usize| E::connect(&routes[i]);
        let within = options::server_timeout(nums.get(Slot::ServerTimeoutMs), ttl_ms, &targets)?;
        let q = Quorum {
            n: targets.len(),
            connect: &connect,
            dialect: &|i: usize| targets[i].shared.dialect(),
            timer: E::timer(),
            within,
        };
        let holder = Holder {
            key: &key,
            identifier: &identifier,
            ttl_ms,
        };
        let first = targets.first().ok_or_else(|| {
            Error::InvalidArgument("a Redlock semaphore needs at least one server".into())
        })?;
        let keep = |sent| keep(&targets, Some(within), kind, holder, sent, &nums);
        // `wakeOnRelease` over independent servers: classic pub/sub on each.
        match op {
            LockOp::Acquire => {
                let stop = cancel.as_ref().map(|c| c.cancel());
                // Each server is bounded by `within`: no cut of its own.
                let waiting = waiting(&nums, Duration::MAX)?;
                let subscribers = match &channel {
                    Some(_) if waiting.may_wait() => targets
                        .iter()
                        .map(|t| wakeups(t, Source::PubSub))
                        .collect::<Result<Vec<_>>>()?,
                    _ => Vec::new(),
                };
                let chans: Vec<&str> = channel.as_deref().into_iter().collect();
                let wake = (!subscribers.is_empty()).then_some((&subscribers[..], &chans[..]));
                let sent = Instant::now();
                let got = semaphore::acquire_quorum(&q, kind, holder, waiting, wake, stop).await?;
                if got.granted && kept {
                    keep(sent)?;
                }
                Ok(Reply::from(got.granted.then_some(got.attempts)))
            }
            LockOp::Extend => {
                let sent = Instant::now();
                // As redis-semaphore: a refresh short of a quorum, for
                // whatever reason, gives the lock back.
                let refreshed = match semaphore::refresh_quorum(&q, kind, holder).await? {
                    Refreshed::Yes => true,
                    Refreshed::No => false,
                    Refreshed::Unsure => {
                        semaphore::release_quorum(&q, kind, holder, None).await;
                        false
                    }
                };
                if refreshed && kept {
                    keep(sent)?;
                }
                Ok(Reply::from(refreshed))
            }
            LockOp::Release => {
                let kept = kept.then(|| held(first, holder));
                let announce = channel.as_deref().map(|c| Announce {
                    channel: c,
                    publish: Source::PubSub.publish(),
                });
                let pause = hold::pause(kept).await;
                // How many servers gave something back: theirs never fails.
                let released: Result<usize> =
                    Ok(semaphore::release_quorum(&q, kind, holder, announce).await);
                pause.released(&released, || {
                    if let Some(c) = &channel {
                        for t in &targets {
                            poke(t, Source::PubSub, c);
                        }
                    }
                });
                Ok(Reply::from(released? >= majority(q.n)))
            }
            LockOp::Inspect => Err(Error::InvalidArgument(
                "inspect() is not a redis-semaphore operation".into(),
            )),
        }
    }
}
