//! node-redlock's operations (`require('redislock-rs/redlock')`), as both
//! engines run them: several resources on several servers by the scripts
//! registered as a set (src/node/scripts.rs), the report back as an object.

use std::any::TypeId;
use std::future::Future;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::hold::{self, Extension};
use crate::keeper::Held;
use crate::locks::fanout::{majority, Outcome, Report, Settle, Step};
use crate::locks::keys::release_channel;
use crate::locks::redlock::{self, RedlockOptions, Resources};
use crate::locks::token;
use crate::node::cancels::acquire_slot;
use crate::node::engine::contract::Engine;
use crate::node::envs::watch_of;
use crate::node::loaded::Learning;
use crate::node::options;
use crate::node::runtime::rt;
use crate::node::scripts::scripts;
use crate::node::targets::{targets, Target};
use crate::node::wake::{poke, wake_source, wakeups};
use crate::node::wire::codes::{Flag, LockOp};
use crate::node::wire::done::{QuorumGrant, QuorumReport, Reply, Value};
use crate::node::wire::nums::{Nums, Slot};
use crate::transport::dialect::Speaks;
use crate::waiting::retry::Retries;
use crate::waiting::wakeups::Source;

/// A redlock operation on `endpoints` with script set `script_set`: the
/// resources `keys` (as Redis names them) and the lock's `value`. The
/// numbers (by [`Slot`]): an acquire's or extend's `Time` (TTL),
/// `Retries` (-1: until granted), `Delay`, `JitterMs` (up to this much
/// more per pause), `DriftFactor`, `ServerTimeoutMs` (0: the default),
/// `Env` and `Cancel` (an acquire's abort), `Flags` (KEEP: the lease
/// keeper renews it until released, bounded by `Hold`, `MaxLagMs` and
/// `MaxHoldMs` as for lockx; VOTES: the full report even when all went
/// well; WAKE: `wakeOnRelease`, waits listen on the resources' release
/// channels and a release announces on them); a release's `Time` (the lock's
/// TTL, for the default server timeout), `ServerTimeoutMs` and its
/// `Retries`, `Delay` and `JitterMs` (node-redlock 5 retries releases). An
/// acquire's cancel slot is registered now, before it starts.
pub(crate) fn redlock<E: Engine>(
    endpoints: &[u32],
    op: LockOp,
    script_set: u32,
    keys: Vec<String>,
    value: String,
    nums: &[f64],
) -> impl Future<Output = Result<Reply>> {
    let nums = Nums::new(nums);
    // A Uint32Array read in place, copied for the operation.
    let endpoints = endpoints.to_vec();
    let cancel = acquire_slot(op, &nums);
    async move {
        let nums = nums?;
        let scripts = scripts(script_set)?;
        let targets = targets(&endpoints)?;
        let routes = E::shared_all(&endpoints)?;
        let connect = |i: usize| E::connect(&routes[i]);
        let (n, timer) = (targets.len(), E::timer());
        let res = Resources {
            keys: &keys,
            value: &value,
        };
        let flags = options::flags(&nums)?;
        // With KEEP the lease keeper renews the lock until it is released;
        // the keeper knows it by its first key and value on the first server.
        let keep = Flag::Keep.in_bits(flags);
        // With WAKE (`wakeOnRelease`) a release announces itself on each
        // resource's channel (as the redislock face's, so either face's
        // waiters wake), and a waiting acquire listens on them all.
        let channels = match Flag::Wake.in_bits(flags) {
            true => keys
                .iter()
                .map(|k| release_channel(k))
                .collect::<Result<Vec<_>>>()?,
            false => Vec::new(),
        };
        let channels: Vec<&str> = channels.iter().map(String::as_str).collect();
        let wake = !channels.is_empty();
        // How each server carries them: sharded pub/sub on a Redis Cluster
        // 7+, else classic (only asked when needed).
        let needed = match op {
            LockOp::Release => true,
            LockOp::Acquire => nums.get(Slot::Retries) != 0.0,
            _ => false,
        };
        let sources = match wake && needed {
            true => sources::<E>(&targets, &routes).await,
            false => Vec::new(),
        };
        let held = || -> Result<Held> {
            let (first, key) = targets.first().zip(keys.first()).ok_or_else(|| {
                Error::InvalidArgument("a redlock needs a server and a resource".into())
            })?;
            Ok(Held::new(&first.shared, key, &value, token::KEPT))
        };
        let dialect = &|i: usize| targets[i].shared.dialect();
        // Where the lock step goes without Lua (the set's own scripts, one
        // resource, a server known to have the compare commands): no
        // script there to be loaded or not.
        let lua_free = |i: usize| {
            scripts.own() && keys.len() == 1 && dialect(i).known() == Some(Speaks::CompareCommands)
        };
        let (report, step) = match op {
            LockOp::Acquire | LockOp::Extend => {
                let base = options::acquire(&nums)?;
                let opts = RedlockOptions {
                    ttl_ms: base.ttl_ms,
                    retries: base.retries,
                    delay: base.delay,
                    jitter: options::jitter(&nums)?,
                    server_timeout: options::server_timeout(
                        nums.get(Slot::ServerTimeoutMs),
                        base.ttl_ms,
                        &targets,
                    )?,
                    drift_factor: nums.get(Slot::DriftFactor),
                    give_back_always: Flag::GiveBack.in_bits(flags),
                };
                let valid_until = |r: &Report| r.valid_until(opts.ttl_ms, opts.drift_factor);
                match op {
                    LockOp::Acquire => {
                        let stop = cancel.as_ref().map(|c| c.cancel());
                        // Waiters only: one attempt never waits.
                        let subscribers = match wake && !matches!(opts.retries, Retries::Count(0)) {
                            true => targets
                                .iter()
                                .zip(&sources)
                                .map(|(t, s)| wakeups(t, *s))
                                .collect::<Result<Vec<_>>>()?,
                            false => Vec::new(),
                        };
                        let listen =
                            (!subscribers.is_empty()).then_some((&subscribers[..], &channels[..]));
                        // Granted on a majority, without the servers known
                        // to have the lock script on their connection
                        // (src/node/loaded.rs), unless JavaScript reports
                        // every vote (node-redlock 5's stats).
                        // (A majority of one or two servers is all of them.)
                        let by_majority = !Flag::Votes.in_bits(flags) && majority(n) < n;
                        let learning = by_majority.then(|| {
                            Learning::new(TypeId::of::<E>(), &endpoints, scripts.lock.hash())
                        });
                        let is_final = |i: usize, c: &E::Conn| {
                            lua_free(i)
                                || learning
                                    .as_ref()
                                    .is_some_and(|l| l.is_final(i, E::conn_id(c)))
                        };
                        let settle = match by_majority {
                            true => Settle::Majority(&is_final),
                            false => Settle::AllServers,
                        };
                        let r = redlock::acquire(
                            n,
                            connect,
                            dialect,
                            timer,
                            &scripts,
                            res,
                            &opts,
                            &options::random,
                            listen,
                            stop,
                            settle,
                        )
                        .await?;
                        // Where the lock script ran (it answered), it is
                        // loaded on that connection now.
                        let ran = |i: usize| {
                            matches!(r.outcomes[i], Outcome::Acquired | Outcome::Held)
                                && !lua_free(i)
                        };
                        if let Some(learning) = &learning {
                            learning.record(ran);
                        }
                        if keep && r.granted {
                            let renewal = redlock::Kept {
                                servers: targets.iter().map(|t| Arc::clone(&t.shared)).collect(),
                                within: opts.server_timeout,
                                scripts: Arc::clone(&scripts),
                                keys: keys.clone(),
                                value: value.clone(),
                                drift_factor: opts.drift_factor,
                            };
                            let (ttl, sent, until) = (opts.ttl_ms, r.started, valid_until(&r));
                            let w = watch_of(&nums)?;
                            hold::keep(rt()?, renewal, held()?, ttl, sent, until, w);
                        }
                        (r, Step::Acquire)
                    }
                    _ => {
                        let pause = hold::pause(keep.then(held).transpose()?).await;
                        let random = &options::random;
                        let extended = redlock::extend(
                            n, connect, dialect, timer, &scripts, res, &opts, random,
                        )
                        .await;
                        // Not extended, for whatever reason: not vouched for.
                        pause.extended(match &extended {
                            Ok(r) if r.granted => Extension::Confirmed {
                                lease_ms: opts.ttl_ms,
                                until: valid_until(r),
                            },
                            _ => Extension::Lost,
                        });
                        (extended?, Step::Extend)
                    }
                }
            }
            LockOp::Release => {
                let ttl = crate::limits::positive_int(nums.get(Slot::Time)).unwrap_or(10_000);
                // A release has no TTL of its own: 1 ms stands in (unused).
                let opts = RedlockOptions {
                    ttl_ms: 1,
                    retries: options::retries(nums.get(Slot::Retries))?,
                    delay: options::delay(nums.get(Slot::Delay))?,
                    jitter: options::jitter(&nums)?,
                    server_timeout: options::server_timeout(
                        nums.get(Slot::ServerTimeoutMs),
                        ttl,
                        &targets,
                    )?,
                    drift_factor: 0.0,
                    give_back_always: false,
                };
                let announce: Vec<Vec<&str>> = sources
                    .iter()
                    .map(|s| {
                        std::iter::once(s.publish())
                            .chain(channels.iter().copied())
                            .collect()
                    })
                    .collect();
                let announce = wake.then_some(&announce[..]);
                let pause = hold::pause(keep.then(held).transpose()?).await;
                let random = &options::random;
                let released = redlock::release(
                    n, connect, dialect, timer, &scripts, res, &opts, random, announce,
                )
                .await;
                // Waiters of this process need not wait for Redis's word.
                pause.released(&released, || {
                    for (t, s) in targets.iter().zip(&sources) {
                        for c in &channels {
                            poke(t, *s, c);
                        }
                    }
                });
                (released?, Step::Release)
            }
            LockOp::Inspect => {
                return Err(Error::InvalidArgument(
                    "inspect() is not a redlock operation".into(),
                ))
            }
        };
        if Flag::Votes.in_bits(flags) {
            return Ok(Reply::With(Value::Report(QuorumReport::of(&report, step))));
        }
        // Without the votes asked for, what went well everywhere answers
        // small (a JavaScript object costs more than the rest of the reply):
        // a release `Yes`, a grant its validity and attempts.
        let everywhere = report.granted
            && report.outcomes.iter().all(Outcome::not_against)
            && report.failures.is_empty();
        Ok(match (everywhere, step) {
            (true, Step::Release) => Reply::Yes,
            (true, _) => Reply::With(Value::Granted(QuorumGrant {
                granted: true,
                validity_ms: report.validity_ms as f64,
                attempts: report.attempts as f64,
            })),
            (false, _) => {
                let mut report = report;
                report.rounds.clear();
                Reply::With(Value::Report(QuorumReport::of(&report, step)))
            }
        })
    }
}

/// How each of `targets` carries `wakeOnRelease` announcements (see
/// `wake_source`); a cluster that cannot be asked now is taken as classic
/// pub/sub, which reaches every node.
async fn sources<E: Engine>(targets: &[Arc<Target>], routes: &[E::Route]) -> Vec<Source> {
    let mut out = Vec::with_capacity(targets.len());
    for (t, r) in targets.iter().zip(routes) {
        let source = match t.endpoint.cluster.is_empty() {
            true => Source::PubSub,
            false => match E::connect(r).await {
                Ok(mut conn) => wake_source(t, &mut conn).await,
                Err(_) => Source::PubSub,
            },
        };
        out.push(source);
    }
    out
}
