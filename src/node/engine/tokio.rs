//! The tokio engine (the fallback on Bun, Deno and Windows; Redis Cluster;
//! replica lanes): `Completer` runs operations on the dedicated tokio
//! thread and reports them to lib/native/bridge.js in batched completions.
//!
//! A napi `async fn` creates a threadsafe function, a deferred and a promise
//! per call, and wakes the JavaScript thread once per settled call. Here
//! JavaScript makes one plain synchronous call per operation (it creates its
//! own Bluebird promise), the operation runs on a dedicated single-threaded
//! Tokio runtime, and finished operations are queued; the JavaScript thread is
//! woken once per batch, through one weak threadsafe function per `Completer`.
//! Liveness while operations are pending is JavaScript's job (a ref'd timer),
//! so nothing here keeps Node alive.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use napi_derive::napi;

use crate::error::{Error as CoreError, Result};
use crate::locks::token::{self, AcquireOptions};
use crate::node::ops::{lockx, quorum, redisson};
use crate::node::runtime::runtime;
use crate::node::targets::{target, targets};
use crate::node::wire::done::{panicked, Done, DoneArgs, Outcome};

/// Items handed from one thread to another in batches. The sender wakes
/// the receiver only for the first item of a batch: a wake-up costs a
/// syscall and a context switch, so it is paid once per batch, not once per
/// item. Used both ways: submitted jobs to the I/O thread ([`INBOX`]) and
/// finished operations to JavaScript ([`CompleterShared::done`]).
struct Mailbox<T> {
    items: Mutex<T>,
    /// The receiver has been woken and has not yet taken the items.
    scheduled: AtomicBool,
}

impl<T: Default> Mailbox<T> {
    const fn new(items: T) -> Self {
        Mailbox {
            items: Mutex::new(items),
            scheduled: AtomicBool::new(false),
        }
    }

    /// Adds to the batch with `put`; `true` when the caller must wake the
    /// receiver.
    fn post(&self, put: impl FnOnce(&mut T)) -> bool {
        // Poisoning only means a panic elsewhere; the items stay consistent.
        put(&mut self.items.lock().unwrap_or_else(|p| p.into_inner()));
        !self.scheduled.swap(true, Ordering::AcqRel)
    }

    /// Takes the batch. Clears the flag first, so an item posted after the
    /// take wakes the receiver again instead of being stranded.
    fn take(&self) -> T {
        self.scheduled.store(false, Ordering::Release);
        std::mem::take(&mut *self.items.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

type Waker = ThreadsafeFunction<(), (), DoneArgs, Status, false, true>;

struct CompleterShared {
    done: Arc<Mailbox<Done>>,
    waker: Waker,
}

impl CompleterShared {
    fn finish<T: Outcome>(&self, id: u32, outcome: Result<T>) {
        let wake = self.done.post(|done| done.record(id, outcome));
        if wake {
            self.waker.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// Runs `op` on the runtime and reports its outcome as operation `id`.
    fn run<F, T>(self: &Arc<Self>, id: u32, op: F)
    where
        T: Outcome + Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let this = Arc::clone(self);
        let Some(rt) = runtime() else {
            let why = "could not start the Tokio runtime thread";
            return this.finish::<bool>(id, Err(CoreError::Internal(why.into())));
        };
        let job: Job = Box::pin(async move {
            // A panic inside an operation must still settle its promise, or
            // JavaScript would wait forever.
            let outcome = AssertUnwindSafe(op)
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err(panicked()));
            this.finish(id, outcome)
        });
        if INBOX.post(|jobs| jobs.push(job)) {
            rt.spawn(drain_inbox());
        }
    }
}

type Job = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Operations submitted from the JavaScript thread, for the I/O thread.
static INBOX: Mailbox<Vec<Job>> = Mailbox::new(Vec::new());

/// Runs on the I/O thread: spawns every queued job locally.
async fn drain_inbox() {
    for job in INBOX.take() {
        tokio::spawn(job);
    }
}

/// Receives finished operations: `onDone(codes, errors)` is called on the
/// JavaScript thread with each code `id << 2 | 0 (false) / 1 (true) / 2
/// (error: its message is the next one in errors)`.
#[napi]
pub struct Completer {
    shared: Arc<CompleterShared>,
}

#[napi]
impl Completer {
    #[napi(constructor, catch_unwind)]
    pub fn new(on_done: Function<DoneArgs, ()>) -> napi::Result<Self> {
        let done = Arc::new(Mailbox::new(Done::default()));
        let for_js = Arc::clone(&done);
        let waker: Waker = on_done
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |_ctx: ThreadsafeCallContext<()>| {
                let batch = for_js.take();
                Ok(FnArgs::from((batch.codes, batch.errors)))
            })?;
        Ok(Completer {
            shared: Arc::new(CompleterShared { done, waker }),
        })
    }

    /// `acquire` as operation `id` (see `token::acquire`): `true` when held.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &self,
        endpoint: u32,
        id: u32,
        key: String,
        token: String,
        ttl: f64,
        retries: f64,
        delay: f64,
    ) {
        self.shared.run(id, async move {
            let inner = target(endpoint)?.shared.clone();
            let opts = AcquireOptions::from_numbers(ttl, retries, delay)?;
            let mut c = inner.get().await?;
            token::acquire(
                &mut c,
                &crate::waiting::timer::TokioTimer,
                &key,
                &token,
                &opts,
            )
            .await
        });
    }

    /// `release` as operation `id` (see `token::release`): `false` when not ours.
    #[napi(catch_unwind)]
    pub fn release(&self, endpoint: u32, id: u32, key: String, token: String) {
        self.shared.run(id, async move {
            let inner = target(endpoint)?.shared.clone();
            let mut c = inner.get().await?;
            token::release(&mut c, &key, &token).await
        });
    }

    /// `extend` as operation `id` (see `token::extend`): `false` when not ours.
    #[napi(catch_unwind)]
    pub fn extend(&self, endpoint: u32, id: u32, key: String, token: String, ms: f64) {
        self.shared.run(id, async move {
            let inner = target(endpoint)?.shared.clone();
            let ms = crate::limits::extension_from_number(ms)?;
            let mut c = inner.get().await?;
            token::extend(&mut c, &key, &token, ms).await
        });
    }

    /// A Redlock operation on several endpoints as operation `id` (see
    /// `quorum::run`).
    #[napi(catch_unwind)]
    pub fn quorum(
        &self,
        endpoints: Vec<u32>,
        id: u32,
        op: u32,
        key: String,
        token: String,
        nums: Vec<f64>,
    ) {
        let cancel = quorum::cancel_slot(op, &nums);
        self.shared.run(id, async move {
            let targets = targets(&endpoints)?;
            let shared: Vec<_> = targets.iter().map(|t| Arc::clone(&t.shared)).collect();
            let connect = |i: usize| shared[i].get();
            let timer = crate::waiting::timer::TokioTimer;
            quorum::run(op, targets, connect, &timer, &key, &token, &nums, cancel).await
        });
    }

    /// An operation of the redislock face's options beyond redislock 1.3.0
    /// as operation `id` (see `lockx::run`).
    #[napi(catch_unwind)]
    pub fn lockx(
        &self,
        endpoint: u32,
        id: u32,
        op: u32,
        key: String,
        token: String,
        nums: Vec<f64>,
    ) {
        let cancel = lockx::cancel_slot(&nums);
        self.shared.run(id, async move {
            let req = lockx::Request::parse(op, key, token, &nums, cancel)?;
            let target = target(endpoint)?;
            // WAIT blocks its connection: replica-acknowledged operations
            // each run on a lane of their own.
            let lane = req.acknowledged().then(|| target.lane());
            let conn = lane.as_ref().map_or(&target.shared, |l| l.conn());
            let mut c = conn.get().await?;
            lockx::run(
                req,
                Arc::clone(&target),
                &mut c,
                &crate::waiting::timer::TokioTimer,
            )
            .await
        });
    }

    /// A Redisson face operation as operation `id` (see `redisson::run`).
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn redisson(
        &self,
        endpoint: u32,
        id: u32,
        op: u32,
        name: String,
        channel: String,
        field: String,
        aux: String,
        lease: f64,
        wait: f64,
        watch: Vec<f64>,
        adapter: String,
    ) {
        self.shared.run(id, async move {
            let req = redisson::Request::parse(
                op, name, channel, field, aux, lease, wait, &watch, &adapter,
            )?;
            let target = target(endpoint)?;
            // As for lockx: a replica-acknowledged tryLock on a lane.
            let lane = req.acknowledged().then(|| target.lane());
            let shared = Arc::clone(lane.as_ref().map_or(&target.shared, |l| l.conn()));
            let connect = || shared.get();
            redisson::run(
                req,
                Arc::clone(&target),
                connect,
                &crate::waiting::timer::TokioTimer,
            )
            .await
        });
    }
}
