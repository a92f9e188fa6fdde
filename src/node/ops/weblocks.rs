//! The Web Locks face's operations (lib/weblocks), as both engines run
//! them, over the queue of src/locks/weblocks.rs: a request (queued and
//! waited for in turn, `ifAvailable`, or `steal`), its release, and
//! `query()`. A waiting request listens on its own channel (a grant made
//! for it by another process's step is announced there, to it alone) and
//! polls every third of its lease, which keeps it alive in the queue; its
//! `AbortSignal` takes it out of the queue. A granted request is kept by
//! the lease keeper until the release (hold.rs).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;

use crate::error::Result;
use crate::hold;
use crate::keeper::{self, Held};
use crate::locks::weblocks::{self, Aborted, How, Mode, Queue, Status};
use crate::node::cancels::{cancel_slot_of, CancelSlot};
use crate::node::engine::contract::Engine;
use crate::node::envs::watch_of;
use crate::node::options;
use crate::node::runtime::rt;
use crate::node::targets::{target, Target};
use crate::node::wake::{wake_source, wakeups};
use crate::node::wire::codes::{Flag, WebOp};
use crate::node::wire::done::{Reply, Value, WebLocksInfo, WebLocksName};
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::retry::{retry, Attempt, Retries, Schedule};
use crate::waiting::timer::Timer;
use crate::waiting::wakeups::Source;

/// A Web Locks operation on `endpoint`, under the key prefix `prefix`, for
/// the name whose UTF-16 code units are `tag` (hex), request `id` of the
/// manager `client`. The numbers (by [`Slot`]): `Time` (the lease, ms),
/// `Mode`, `How`, `Flags` (KEEP: the keeper renews a grant, with `Hold`,
/// `Env`, `MaxLagMs`, `MaxHoldMs`), `Cancel` (the request's signal).
/// Replies: REQUEST `Yes` (granted) or `No` (not available, or aborted);
/// RELEASE `Yes` or `No` (no longer held); QUERY every name's requests.
pub(crate) fn weblock<E: Engine>(
    endpoint: u32,
    op: WebOp,
    prefix: String,
    tag: String,
    id: String,
    client: String,
    nums: &[f64],
) -> impl Future<Output = Result<Reply>> {
    let nums = Nums::new(nums);
    let cancel = nums.as_ref().ok().and_then(cancel_slot_of);
    async move {
        let nums = nums?;
        let target = target(endpoint)?;
        let route = E::shared(endpoint)?;
        let mut conn = E::connect(&route).await?;
        if op == WebOp::Query {
            return query(&mut conn, &target, &prefix).await;
        }
        let queue = Queue::of_tag(&prefix, &tag)?;
        let req = Req {
            endpoint,
            queue: &queue,
            id: &id,
            nums: &nums,
            prefix: &prefix,
        };
        match op {
            WebOp::Request => request(&mut conn, &target, E::timer(), req, &client, cancel).await,
            _ => release(&mut conn, &target, req).await,
        }
    }
}

/// What every step of one request names.
#[derive(Clone, Copy)]
struct Req<'a> {
    endpoint: u32,
    queue: &'a Queue,
    id: &'a str,
    nums: &'a Nums,
    prefix: &'a str,
}

impl Req<'_> {
    fn held(&self, target: &Target) -> Held {
        Held::new(
            &target.shared,
            self.queue.held_key(),
            self.id,
            weblocks::KEPT,
        )
    }
}

async fn request<C: ConnectionLike>(
    conn: &mut C,
    target: &Arc<Target>,
    timer: &dyn Timer,
    req: Req<'_>,
    client: &str,
    cancel: Option<CancelSlot>,
) -> Result<Reply> {
    let nums = req.nums;
    let lease = options::lease_ms(nums.get(Slot::Time))?;
    let (mode, how) = (options::web_mode(nums)?, options::web_how(nums)?);
    let keep = Flag::Keep.in_bits(options::flags(nums)?);
    let watch = keep.then(|| watch_of(nums)).transpose()?;
    let source = wake_source(target, conn).await;
    let publish = source.publish();
    touch(conn, req).await?;
    // Only a queued request waits: subscribed to its own channel.
    let granted = (how == How::Queue).then(|| req.queue.granted_channel(req.id));
    let subscriber = granted
        .as_ref()
        .map(|_| wakeups(target, source))
        .transpose()?;
    let channel = granted.as_deref().map(|c| [c]);
    let wake = subscriber
        .as_ref()
        .zip(channel.as_ref())
        .map(|(w, c)| (std::slice::from_ref(w), &c[..]));
    let schedule = Schedule {
        retries: match how {
            How::Queue => Retries::Forever,
            _ => Retries::Count(0),
        },
        // A waiter's poll keeps its place alive: three per lease.
        delay: Duration::from_millis((lease / 3).max(1)),
        jitter: Duration::ZERO,
    };
    let stop = cancel.as_ref().map(CancelSlot::cancel);
    let mut turn = Turn {
        conn: &mut *conn,
        req,
        publish,
        mode,
        how,
        lease,
        client,
        asked: false,
        last_sent: None,
    };
    let waited = retry(&mut turn, timer, &schedule, &|| 0.0, wake, stop).await?;
    let Ok(granted) = waited.outcome else {
        if how == How::Queue {
            // Aborted: out of the queue, or given back if granted meanwhile.
            let (queue, id) = (req.queue, req.id);
            if weblocks::abort(conn, queue, publish, id).await? == Aborted::Held {
                weblocks::release(conn, queue, publish, id).await?;
            }
        }
        return Ok(Reply::No);
    };
    if let Some(w) = watch {
        let renewal = weblocks::Kept {
            server: Arc::clone(&target.shared),
            queue: req.queue.clone(),
            id: req.id.to_string(),
            publish,
        };
        let until = granted + Duration::from_millis(lease);
        hold::keep(rt()?, renewal, req.held(target), lease, granted, until, w);
        watch_steals(req.endpoint, target, req.prefix)?;
    }
    Ok(Reply::Yes)
}

/// The names this process put in their prefix's index lately, by server,
/// prefix and tag, and when: a name asked for again soon after needs no
/// second `ZADD` (the index keeps a name for a grace period after its last
/// touch; a touch at most every [`TOUCH_EVERY`] stays well inside it).
static TOUCHED: LazyLock<Mutex<HashMap<(u32, String), Instant>>> = LazyLock::new(Mutex::default);

/// How often one process touches a name it keeps asking for.
const TOUCH_EVERY: Duration = Duration::from_millis(2_000);

/// The most names remembered as touched (then they are forgotten at once).
const TOUCHED_AT_MOST: usize = 10_000;

/// Puts `req`'s name in its prefix's index (for `query()`) unless this
/// process did so lately.
async fn touch<C: ConnectionLike>(conn: &mut C, req: Req<'_>) -> Result<()> {
    let key = (req.endpoint, format!("{}\n{}", req.prefix, req.queue.tag()));
    let now = Instant::now();
    {
        let mut touched = locked(&TOUCHED);
        if touched
            .get(&key)
            .is_some_and(|at| now.duration_since(*at) < TOUCH_EVERY)
        {
            return Ok(());
        }
        if touched.len() >= TOUCHED_AT_MOST {
            touched.clear();
        }
        touched.insert(key.clone(), now);
    }
    let touched = weblocks::touch(conn, req.prefix, req.queue).await;
    if touched.is_err() {
        locked(&TOUCHED).remove(&key);
    }
    touched
}

/// Servers and prefixes with a steal watcher running (see [`watch_steals`]).
static WATCHING: LazyLock<Mutex<HashSet<(u32, String)>>> = LazyLock::new(Mutex::default);

/// While this process keeps a Web Lock under `prefix` on `target`, one
/// subscription to the prefix's steal channel (a `steal` that took a lock
/// from its holders announces there) has the keeper renew those locks at
/// once: a holder whose lock was stolen is told within a round trip, not
/// at its next renewal. One per server and prefix, not one per lock: it
/// ends when no such lock is kept.
fn watch_steals(endpoint: u32, target: &Arc<Target>, prefix: &str) -> Result<()> {
    let key = (endpoint, prefix.to_string());
    if !locked(&WATCHING).insert(key.clone()) {
        return Ok(());
    }
    let started = wakeups(target, Source::PubSub).and_then(|w| Ok((w, rt()?)));
    let (wake, rt) = match started {
        Ok(both) => both,
        Err(e) => {
            locked(&WATCHING).remove(&key);
            return Err(e);
        }
    };
    let channel = weblocks::steals_channel(prefix);
    let ours = weblocks::held_prefix(prefix);
    let mine = move |h: &Held| h.is(weblocks::KEPT) && h.name.starts_with(&ours);
    rt.spawn(async move {
        // No subscriber (a relayed client): renewals alone tell.
        let mut sub = wake.subscribe(&channel).await.ok();
        loop {
            if let Some(s) = sub.as_mut() {
                s.mark();
            }
            let woke = match sub.as_mut() {
                Some(s) => matches!(
                    tokio::time::timeout(STILL_KEPT_EVERY, s.wait()).await,
                    Ok(Ok(()))
                ),
                None => {
                    tokio::time::sleep(STILL_KEPT_EVERY).await;
                    false
                }
            };
            // Checked and given up under the registry's lock: a grant that
            // starts a watcher meanwhile finds this one still registered
            // only while it still runs.
            let mut watching = locked(&WATCHING);
            let kept = match woke {
                true => keeper::nudge_where(&mine) > 0,
                false => keeper::any_where(&mine),
            };
            if !kept {
                watching.remove(&key);
                return;
            }
        }
    });
    Ok(())
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How often a steal watcher checks that a lock of its prefix is still
/// kept (it ends when none is), when nothing is announced.
const STILL_KEPT_EVERY: Duration = Duration::from_millis(500);

/// A request's turns: the request itself, then polls until it is held.
struct Turn<'a, C> {
    conn: &'a mut C,
    req: Req<'a>,
    publish: &'static str,
    mode: Mode,
    how: How,
    lease: u64,
    client: &'a str,
    /// The request was made (a poll follows).
    asked: bool,
    /// When the previous step was sent: a grant seen by a poll was made
    /// after it, so its lease runs from no earlier than that.
    last_sent: Option<Instant>,
}

impl<C: ConnectionLike> Attempt for Turn<'_, C> {
    /// When the grant's lease runs from, at the earliest.
    type Won = Instant;
    type Lost = ();

    async fn attempt(&mut self) -> Result<std::result::Result<Instant, ()>> {
        let sent = Instant::now();
        let since = self.last_sent.replace(sent).unwrap_or(sent);
        let (queue, id, publish) = (self.req.queue, self.req.id, self.publish);
        let polled = self.asked;
        let status = match self.asked {
            false => {
                self.asked = true;
                let (mode, lease, how) = (self.mode, self.lease, self.how);
                weblocks::request(self.conn, queue, publish, id, mode, lease, self.client, how)
                    .await?
            }
            true => weblocks::poll(self.conn, queue, publish, id, self.lease).await?,
        };
        Ok(match status {
            // Granted by another process's step since the previous one.
            Status::Held if polled => Ok(since),
            Status::Held => Ok(sent),
            Status::Pending => Err(()),
            Status::Gone => {
                // Dropped from the queue (its waiter was away longer than
                // its lease): asked again, at the back.
                self.asked = false;
                Err(())
            }
        })
    }
}

async fn release<C: ConnectionLike>(
    conn: &mut C,
    target: &Arc<Target>,
    req: Req<'_>,
) -> Result<Reply> {
    let keep = Flag::Keep.in_bits(options::flags(req.nums)?);
    let pause = hold::pause(keep.then(|| req.held(target))).await;
    let source = wake_source(target, conn).await;
    let released = weblocks::release(conn, req.queue, source.publish(), req.id).await;
    // Whom the release let in hears it on its own channel, from Redis.
    pause.released(&released, || {});
    Ok(Reply::from(released?))
}

async fn query<C: ConnectionLike>(
    conn: &mut C,
    target: &Arc<Target>,
    prefix: &str,
) -> Result<Reply> {
    let source = wake_source(target, conn).await;
    let names = weblocks::index(conn, prefix, source.publish()).await?;
    let info = |i: &weblocks::Info| WebLocksInfo {
        mode: match i.mode {
            Mode::Exclusive => "exclusive",
            Mode::Shared => "shared",
        }
        .into(),
        client_id: i.client_id.clone(),
    };
    let names = names
        .into_iter()
        .map(|(tag, s)| WebLocksName {
            tag,
            held: s.held.iter().map(info).collect(),
            pending: s.pending.iter().map(info).collect(),
        })
        .collect();
    Ok(Reply::With(Value::WebLocks(names)))
}
