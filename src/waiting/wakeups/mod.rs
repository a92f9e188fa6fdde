//! Wake-ups on release: one subscriber connection per server and adapter,
//! shared by every waiter in the process, on the tokio runtime.
//!
//! A waiter takes a [`Subscription`] to the lock's channel *before* its
//! first attempt: `subscribe` returns only once Redis has confirmed the
//! `SUBSCRIBE` (pub/sub) or the stream reader has fixed the position it
//! reads from (streams), so a release after that point is always seen.
//! Each channel keeps a generation counter: a release bumps it, and a
//! waiter sleeps until the counter moves past the value it saw before its
//! attempt ([`Subscription::mark`]) — no wake-up can fall between the two.
//! Channels are reference-counted: `UNSUBSCRIBE` goes out only when the last
//! waiter of a channel in this process is gone, never under another waiter.
//! If the subscriber connection breaks, every waiter is woken (it retries
//! its attempt at once) and the next wait subscribes again on a new
//! connection; waits stay bounded by the holder's PTTL meanwhile.
//!
//! A release wakes every waiter of its channel, but on a channel whose
//! waiters asked for one at a time ([`Wakeups::subscribe_with`]: Redisson's
//! exclusive locks), Redisson's `UNLOCK_MESSAGE` (`0`: one lock was freed,
//! one waiter can have it) wakes one waiter, as Java Redisson's `LockPubSub`
//! does; any other message (`1`, a write unlock: every reader may go) and a
//! broken link still wake them all. The wake-up is a permit
//! (`Notify::notify_one`): kept for the next waiter when none is asleep
//! yet, and handed to another when the one it picked stops waiting, so it
//! is never lost; a waiter it picked that loses the lock to another process
//! sleeps again, as do the others, until that holder's release or PTTL.
//!
//! The primitives (`Notify`, atomics, oneshot) work from any executor, so a
//! waiter on the JS-thread engine is woken across threads by the same code.
//!
//! On Redis Cluster (7.0 and later) the redislock face's wake-ups use
//! sharded pub/sub ([`Source::Sharded`]): `SSUBSCRIBE` through the crate's
//! cluster connection, which sends it to the node serving the channel's
//! slot (the lock key's) and subscribes again after a failover or a slot
//! move. A node's link dropping wakes every waiter, as a broken link does.
//!
//! This file is the registry (channels and their waiters, subscriptions,
//! what a release heard does, when to connect and unsubscribe); `links.rs`
//! makes the subscriber connection for each [`Source`] and its reader, and
//! knows nothing of the registry; `channel.rs` is one channel's state and
//! `stream.rs` parses node-redisson's event stream.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::{select, Either};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::transport::endpoint::Endpoint;

mod channel;
mod links;
mod stream;

use channel::Channel;
pub use links::Source;
use links::{Link, Listener};
pub use stream::EVENTS_STREAM;

/// Channels with waiters in this process: each with its waiter count.
type Channels = HashMap<String, (Arc<Channel>, usize)>;

pub struct Wakeups {
    endpoint: Endpoint,
    source: Source,
    rt: Handle,
    channels: Mutex<Channels>,
    /// Names the current link state: incremented when a link is made and
    /// when one is dropped, so a confirmation names exactly one live link
    /// (0: none made yet).
    epoch: AtomicU64,
    /// Serialises connecting, SUBSCRIBE and UNSUBSCRIBE on the link.
    link: tokio::sync::Mutex<Option<Link>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Poisoning only means a panic elsewhere; the maps stay consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Wakeups {
    /// A wake-up source for `endpoint` from `source`, whose subscriber runs
    /// on `rt`. Make one per server and source and share it (the napi layer
    /// keeps them with its endpoints).
    pub fn new(endpoint: &Endpoint, source: Source, rt: &Handle) -> Arc<Wakeups> {
        Arc::new(Wakeups {
            endpoint: endpoint.clone(),
            source,
            rt: rt.clone(),
            channels: Mutex::default(),
            epoch: AtomicU64::new(0),
            link: tokio::sync::Mutex::new(None),
        })
    }

    /// A subscription to `channel`, confirmed by Redis before it returns.
    pub async fn subscribe(self: &Arc<Self>, channel: &str) -> Result<Subscription> {
        self.subscribe_with(channel, false).await
    }

    /// [`subscribe`](Self::subscribe); `one_at_a_time`: the channel's
    /// waiters take a freed lock one at a time (see the module's note).
    pub async fn subscribe_with(
        self: &Arc<Self>,
        channel: &str,
        one_at_a_time: bool,
    ) -> Result<Subscription> {
        let owner = Arc::clone(self);
        let chan = {
            let mut ch = locked(&owner.channels);
            let entry = ch
                .entry(channel.to_string())
                .or_insert_with(|| (Arc::new(Channel::new(0)), 0));
            entry.1 += 1;
            if one_at_a_time {
                entry.0.one_at_a_time.store(true, Ordering::Release);
            }
            Arc::clone(&entry.0)
        };
        let mut sub = Subscription {
            owner,
            name: channel.to_string(),
            chan,
            seen: 0,
            epoch: 0,
        };
        sub.confirm().await?;
        Ok(sub)
    }

    /// For tests without Redis: a source whose link counts as up and on
    /// which `channel` is already confirmed, so [`subscribe`](Self::subscribe)
    /// to it needs no server (the first one only: its drop forgets it).
    /// [`announce`](Self::announce) stands in for a release seen.
    #[cfg(test)]
    pub(crate) fn offline(channel: &str) -> Arc<Wakeups> {
        let spec = crate::transport::endpoint::EndpointSpec {
            url: Some("redis://127.0.0.1:1".into()),
            ..Default::default()
        };
        let endpoint = Endpoint::resolve(spec).expect("endpoint");
        let w = Wakeups::new(&endpoint, Source::PubSub, &Handle::current());
        w.epoch.store(1, Ordering::Release);
        let chan = Arc::new(Channel::new(1));
        locked(&w.channels).insert(channel.to_string(), (chan, 0));
        w
    }

    /// A release of `channel` seen, as if announced by Redis.
    #[cfg(test)]
    pub(crate) fn announce(&self, channel: &str) {
        self.released(channel);
    }

    /// Runs `job` on the tokio runtime and waits for it from any executor.
    async fn on_runtime<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.rt.spawn(async move {
            let _ = tx.send(job.await);
        });
        rx.await
            .map_err(|_| Error::Internal("the tokio runtime dropped a subscribe".into()))?
    }

    /// Makes sure `chan` is subscribed on the current link (connecting if
    /// there is none); returns the link's epoch. Runs on the runtime.
    async fn ensure(self: Arc<Self>, name: String, chan: Arc<Channel>) -> Result<u64> {
        let mut link = self.link.lock().await;
        if link.is_none() {
            let listener: Arc<dyn Listener> = Arc::clone(&self) as Arc<dyn Listener>;
            let (made, reader) = links::connect(&self.endpoint, self.source, listener).await?;
            let epoch = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
            let me = Arc::clone(&self);
            self.rt.spawn(async move {
                reader.await;
                me.broken(epoch).await;
            });
            *link = Some(made);
        }
        let epoch = self.epoch.load(Ordering::Acquire);
        if chan.confirmed.load(Ordering::Acquire) == epoch {
            return Ok(epoch);
        }
        if let Some(live) = link.as_mut() {
            if let Err(e) = live.subscribe(&name, self.endpoint.command_timeout).await {
                self.drop_link(&mut link);
                return Err(e);
            }
        }
        chan.confirmed.store(epoch, Ordering::Release);
        Ok(epoch)
    }

    /// A release this process just made on `channel` (its reply is in):
    /// wakes one waiter of this process at once, on the releaser's own
    /// thread, without waiting for Redis's announcement to come back over
    /// the subscriber connection (which still wakes every waiter, as for
    /// any release). At worst one extra attempt.
    pub fn poke(&self, channel: &str) {
        if let Some(c) = self.channel(channel) {
            c.poke.notify_one();
        }
    }

    /// `channel`'s state, when a waiter of this process listens on it.
    fn channel(&self, channel: &str) -> Option<Arc<Channel>> {
        locked(&self.channels)
            .get(channel)
            .map(|(c, _)| Arc::clone(c))
    }

    /// Forgets the link: every confirmation made on it is stale.
    fn drop_link(&self, link: &mut Option<Link>) {
        *link = None;
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// The link of `epoch` is gone: forget it and wake every waiter, so
    /// each retries at once and subscribes again before its next sleep.
    async fn broken(&self, epoch: u64) {
        let mut link = self.link.lock().await;
        if self.epoch.load(Ordering::Acquire) == epoch {
            self.drop_link(&mut link);
        }
        drop(link);
        self.wake_all();
    }

    /// Wakes every waiter (each retries at once).
    fn wake_all(&self) {
        let all: Vec<Arc<Channel>> = locked(&self.channels)
            .values()
            .map(|(c, _)| Arc::clone(c))
            .collect();
        for c in all {
            c.bump();
        }
    }

    /// The last waiter of `name` left: unsubscribe, unless a new one came.
    async fn release_channel(self: Arc<Self>, name: String) {
        let mut link = self.link.lock().await;
        let gone = {
            let mut ch = locked(&self.channels);
            match ch.get(&name) {
                Some((_, 0)) => {
                    ch.remove(&name);
                    true
                }
                _ => false,
            }
        };
        if gone {
            let within = self.endpoint.command_timeout;
            let done = match link.as_mut() {
                Some(live) => live.unsubscribe(&name, within).await,
                None => true,
            };
            if !done {
                // Unsure state: start over on a fresh link next time.
                self.drop_link(&mut link);
            }
        }
    }
}

/// What the link's reader hears, told to this process's waiters.
impl Listener for Wakeups {
    fn heard(&self, channel: &str, payload: &[u8]) {
        if let Some(c) = self.channel(channel) {
            c.heard(payload);
        }
    }

    fn released(&self, channel: &str) {
        if let Some(c) = self.channel(channel) {
            c.bump();
        }
    }

    fn missed(&self) {
        self.wake_all();
    }

    fn idle(&self) -> bool {
        locked(&self.channels).is_empty()
    }
}

/// One waiter's subscription to one channel. Dropping it unsubscribes when
/// it was the channel's last.
pub struct Subscription {
    owner: Arc<Wakeups>,
    name: String,
    chan: Arc<Channel>,
    seen: u64,
    epoch: u64,
}

impl Subscription {
    async fn confirm(&mut self) -> Result<()> {
        // Already subscribed on the live link (another waiter of the same
        // channel did it): no trip to the runtime.
        let epoch = self.owner.epoch.load(Ordering::Acquire);
        if epoch != 0 && self.chan.confirmed.load(Ordering::Acquire) == epoch {
            self.epoch = epoch;
            return Ok(());
        }
        let owner = Arc::clone(&self.owner);
        let (name, chan) = (self.name.clone(), Arc::clone(&self.chan));
        self.epoch = self
            .owner
            .on_runtime(async move { owner.ensure(name, chan).await })
            .await?;
        Ok(())
    }

    /// Call before each attempt: a release after this wakes [`wait`](Self::wait).
    pub fn mark(&mut self) {
        self.seen = self.chan.generation.load(Ordering::Acquire);
    }

    /// Returns once a release (or a broken subscriber link) has been seen
    /// since [`mark`](Self::mark), or this waiter was [poked](Wakeups::poke);
    /// after a broken link it first subscribes again, so the next attempt
    /// is covered.
    pub async fn wait(&mut self) -> Result<()> {
        loop {
            let notified = self.chan.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.chan.generation.load(Ordering::Acquire) != self.seen {
                break;
            }
            // A poke (a release by this process) wakes this waiter alone.
            let poked = std::pin::pin!(self.chan.poke.notified());
            if let Either::Right(_) = select(notified, poked).await {
                break;
            }
        }
        if self.owner.epoch.load(Ordering::Acquire) != self.epoch
            || self.chan.confirmed.load(Ordering::Acquire) != self.epoch
        {
            self.confirm().await?;
        }
        Ok(())
    }
}

/// Subscriptions to a lock's release channels (one, or one per resource
/// of a node-redlock lock) on several servers (a Redlock waiter's): a
/// release announced on any of them ends [`wait`](Self::wait).
pub struct AnyRelease {
    subs: Vec<Subscription>,
}

impl AnyRelease {
    /// Subscribes to every one of `channels` on every source that answers;
    /// `None` when none did (the waiter then polls).
    pub async fn subscribe(
        sources: &[Arc<Wakeups>],
        channels: &[&str],
        one_at_a_time: bool,
    ) -> Option<AnyRelease> {
        let each = sources.iter().flat_map(|w| {
            channels
                .iter()
                .map(move |c| w.subscribe_with(c, one_at_a_time))
        });
        let tries = futures_util::future::join_all(each);
        let subs: Vec<Subscription> = tries.await.into_iter().filter_map(|s| s.ok()).collect();
        (!subs.is_empty()).then_some(AnyRelease { subs })
    }

    /// Subscribes to every one of `channels` on every source, or fails with
    /// the first error (a waiter that must not poll: node-redisson's
    /// `tryLock`).
    pub async fn subscribe_every(
        sources: &[Arc<Wakeups>],
        channels: &[&str],
        one_at_a_time: bool,
    ) -> Result<AnyRelease> {
        if sources.is_empty() || channels.is_empty() {
            return Err(Error::Internal("no wake-up source to subscribe on".into()));
        }
        let mut subs = Vec::with_capacity(sources.len() * channels.len());
        for w in sources {
            for c in channels {
                subs.push(w.subscribe_with(c, one_at_a_time).await?);
            }
        }
        Ok(AnyRelease { subs })
    }

    /// Call before each attempt (see [`Subscription::mark`]).
    pub fn mark(&mut self) {
        for s in &mut self.subs {
            s.mark();
        }
    }

    /// Returns once a release was seen on any server since [`mark`](Self::mark);
    /// a server whose subscriber failed is dropped, and an error comes back
    /// only when none is left.
    pub async fn wait(&mut self) -> Result<()> {
        loop {
            if let [one] = self.subs.as_mut_slice() {
                // One server (the usual case): no boxing.
                return one.wait().await;
            }
            let (outcome, failed) = {
                let waits = self.subs.iter_mut().map(|s| Box::pin(s.wait()));
                let (outcome, index, _) = futures_util::future::select_all(waits).await;
                (outcome, index)
            };
            match outcome {
                Ok(()) => return Ok(()),
                Err(e) => {
                    self.subs.swap_remove(failed);
                    if self.subs.is_empty() {
                        return Err(e);
                    }
                }
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let last = {
            let mut ch = locked(&self.owner.channels);
            match ch.get_mut(&self.name) {
                Some((_, n)) => {
                    *n = n.saturating_sub(1);
                    *n == 0
                }
                None => false,
            }
        };
        if last {
            let owner = Arc::clone(&self.owner);
            let name = std::mem::take(&mut self.name);
            self.owner.rt.spawn(owner.release_channel(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Waiters `subs` each waiting once, counted in `woke` when woken.
    fn waiting(subs: Vec<Subscription>, woke: &Arc<AtomicU64>) {
        for mut sub in subs {
            let woke = Arc::clone(woke);
            tokio::spawn(async move {
                sub.mark();
                if sub.wait().await.is_ok() {
                    woke.fetch_add(1, Ordering::AcqRel);
                }
            });
        }
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    #[tokio::test]
    async fn an_unlock_message_wakes_one_waiter_of_an_exclusive_lock_and_a_write_unlock_all() {
        let w = Wakeups::offline("lock");
        let mut subs = Vec::new();
        for _ in 0..3 {
            subs.push(w.subscribe_with("lock", true).await.expect("subscribe"));
        }
        let woke = Arc::new(AtomicU64::new(0));
        waiting(subs, &woke);
        settle().await;
        w.heard("lock", b"0");
        settle().await;
        assert_eq!(
            woke.load(Ordering::Acquire),
            1,
            "one freed lock, one waiter"
        );
        w.heard("lock", b"1");
        settle().await;
        assert_eq!(
            woke.load(Ordering::Acquire),
            3,
            "a write unlock wakes the rest"
        );
    }

    #[tokio::test]
    async fn a_wake_up_before_anyone_sleeps_is_kept_and_other_channels_wake_all() {
        let w = Wakeups::offline("lock");
        let sub = w.subscribe_with("lock", true).await.expect("subscribe");
        // Heard between a waiter's attempt and its sleep: not lost.
        w.heard("lock", b"0");
        let woke = Arc::new(AtomicU64::new(0));
        waiting(vec![sub], &woke);
        settle().await;
        assert_eq!(woke.load(Ordering::Acquire), 1);

        // A channel whose waiters did not ask for one at a time (a latch's
        // zero count is "0" too): everyone wakes.
        let latch = Wakeups::offline("latch");
        let mut subs = Vec::new();
        for _ in 0..2 {
            subs.push(latch.subscribe("latch").await.expect("subscribe"));
        }
        let woke = Arc::new(AtomicU64::new(0));
        waiting(subs, &woke);
        settle().await;
        latch.heard("latch", b"0");
        settle().await;
        assert_eq!(woke.load(Ordering::Acquire), 2);
    }
}
