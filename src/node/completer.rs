//! Batched completions: the hot path used by lib/operations.js.
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
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::FutureExt;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use napi_derive::napi;

use super::{to_napi, RedisConnection};
use crate::error::Error as CoreError;
use crate::lock::{self, AcquireOptions};

/// Completion codes, packed with the operation id as `id << 2 | code`.
const DONE_FALSE: u32 = 0;
const DONE_TRUE: u32 = 1;
const DONE_ERROR: u32 = 2;

/// The runtime the batched operations run on: current-thread, driven by one
/// dedicated thread, so an operation never hops between Tokio workers.
fn runtime() -> Option<&'static tokio::runtime::Handle> {
    static RT: OnceLock<Option<tokio::runtime::Handle>> = OnceLock::new();
    RT.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        let handle = rt.handle().clone();
        std::thread::Builder::new()
            .name("redislock-rs".into())
            .spawn(move || rt.block_on(std::future::pending::<()>()))
            .ok()?;
        Some(handle)
    })
    .as_ref()
}

#[derive(Default)]
struct Batch {
    codes: Vec<u32>,
    errors: Vec<String>,
}

#[derive(Default)]
struct Queue {
    batch: Mutex<Batch>,
    /// A wake-up is queued and has not yet taken the batch.
    scheduled: AtomicBool,
}

impl Queue {
    fn take(&self) -> Batch {
        self.scheduled.store(false, Ordering::Release);
        std::mem::take(&mut *self.batch.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

type DoneArgs = FnArgs<(Vec<u32>, Vec<String>)>;
type Waker = ThreadsafeFunction<(), (), DoneArgs, Status, false, true>;

struct CompleterShared {
    queue: Arc<Queue>,
    waker: Waker,
}

impl CompleterShared {
    fn finish(&self, id: u32, outcome: napi::Result<bool>) {
        {
            let mut batch = self.queue.batch.lock().unwrap_or_else(|p| p.into_inner());
            match outcome {
                Ok(done) => batch
                    .codes
                    .push(id << 2 | if done { DONE_TRUE } else { DONE_FALSE }),
                Err(err) => {
                    batch.codes.push(id << 2 | DONE_ERROR);
                    batch.errors.push(err.reason.clone());
                }
            }
        }
        if !self.queue.scheduled.swap(true, Ordering::AcqRel) {
            self.waker.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// Runs `op` on the runtime and reports its outcome as operation `id`.
    fn run<F>(self: &Arc<Self>, id: u32, op: F)
    where
        F: Future<Output = napi::Result<bool>> + Send + 'static,
    {
        let this = Arc::clone(self);
        match runtime() {
            Some(rt) => INBOX.submit(
                rt,
                Box::pin(async move {
                    // A panic inside an operation must still settle its
                    // promise, or JavaScript would wait forever.
                    let outcome = AssertUnwindSafe(op).catch_unwind().await.unwrap_or_else(|_| {
                        Err(napi::Error::from_reason(
                            "[ERR_INTERNAL] redislock-rs hit an internal error (a Rust panic, caught); please report it",
                        ))
                    });
                    this.finish(id, outcome)
                }),
            ),
            None => this.finish(
                id,
                Err(napi::Error::from_reason(
                    "[ERR_RUNTIME] could not start the Tokio runtime thread",
                )),
            ),
        }
    }
}

type Job = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Operations submitted from the JavaScript thread, handed to the runtime
/// thread in batches: waking that thread costs a syscall and a context
/// switch, so it is woken once per batch, not once per operation.
struct Inbox {
    jobs: Mutex<Vec<Job>>,
    /// A drain task is spawned and has not yet taken the jobs.
    scheduled: AtomicBool,
}

static INBOX: Inbox = Inbox {
    jobs: Mutex::new(Vec::new()),
    scheduled: AtomicBool::new(false),
};

impl Inbox {
    fn submit(&'static self, rt: &tokio::runtime::Handle, job: Job) {
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(job);
        if !self.scheduled.swap(true, Ordering::AcqRel) {
            rt.spawn(self.drain());
        }
    }

    /// Runs on the runtime thread: spawns every queued job locally.
    async fn drain(&'static self) {
        // Clear the flag before taking, so a job queued after the take
        // schedules a new drain instead of being stranded.
        self.scheduled.store(false, Ordering::Release);
        let jobs = std::mem::take(&mut *self.jobs.lock().unwrap_or_else(|p| p.into_inner()));
        for job in jobs {
            tokio::spawn(job);
        }
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
        let queue = Arc::new(Queue::default());
        let for_js = Arc::clone(&queue);
        let waker: Waker = on_done
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |_ctx: ThreadsafeCallContext<()>| {
                let batch = for_js.take();
                Ok(FnArgs::from((batch.codes, batch.errors)))
            })?;
        Ok(Completer {
            shared: Arc::new(CompleterShared { queue, waker }),
        })
    }

    /// `acquire` as operation `id`; see `RedisConnection::acquire`.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &self,
        conn: &RedisConnection,
        id: u32,
        key: String,
        token: String,
        ttl: f64,
        retries: f64,
        delay: f64,
    ) {
        let inner = Arc::clone(&conn.inner);
        self.shared.run(id, async move {
            let opts = AcquireOptions::from_numbers(ttl, retries, delay).map_err(to_napi)?;
            let mut c = inner.get().await.map_err(to_napi)?;
            lock::acquire(&mut c, &key, &token, &opts)
                .await
                .map_err(to_napi)
        });
    }

    /// `release` as operation `id`; see `RedisConnection::release`.
    #[napi(catch_unwind)]
    pub fn release(&self, conn: &RedisConnection, id: u32, key: String, token: String) {
        let inner = Arc::clone(&conn.inner);
        self.shared.run(id, async move {
            let mut c = inner.get().await.map_err(to_napi)?;
            lock::release(&mut c, &key, &token).await.map_err(to_napi)
        });
    }

    /// `extend` as operation `id`; see `RedisConnection::extend`.
    #[napi(catch_unwind)]
    pub fn extend(&self, conn: &RedisConnection, id: u32, key: String, token: String, ms: f64) {
        let inner = Arc::clone(&conn.inner);
        self.shared.run(id, async move {
            let ms = lock::positive_int(ms).ok_or_else(|| {
                to_napi(CoreError::InvalidArgument(format!(
                    "Invalid extension {ms}: expected a positive integer number of milliseconds"
                )))
            })?;
            let mut c = inner.get().await.map_err(to_napi)?;
            lock::extend(&mut c, &key, &token, ms)
                .await
                .map_err(to_napi)
        });
    }
}
