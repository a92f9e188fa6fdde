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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use napi_derive::napi;

use crate::error::{Error as CoreError, Result};
use crate::node::engine::contract::Engine;
use crate::node::runtime::runtime;
use crate::node::targets::{target, Lane, Target};
use crate::node::wire::done::{settled, Done, DoneArgs, Reply};
use crate::transport::connection::SharedConnection;
use crate::waiting::timer::{Timer, TokioTimer};

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
    fn finish<T: Into<Reply>>(&self, id: u32, outcome: Result<T>) {
        let wake = self.done.post(|done| done.record(id, outcome));
        if wake {
            self.waker.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// Runs `op` on the runtime and reports its outcome as operation `id`.
    fn run<F, T>(self: &Arc<Self>, id: u32, op: F)
    where
        T: Into<Reply> + Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let this = Arc::clone(self);
        let Some(rt) = runtime() else {
            let why = "could not start the Tokio runtime thread";
            return this.finish::<Reply>(id, Err(CoreError::Internal(why.into())));
        };
        // A panic inside an operation must still settle its promise, or
        // JavaScript would wait forever (`settled`).
        let job: Job = Box::pin(settled(op).map(move |outcome| this.finish(id, outcome)));
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

/// Receives finished operations: `onDone(codes, values)` is called on the
/// JavaScript thread with a batch (src/node/wire/done.rs). The operations
/// themselves are declared once for both engines in src/node/entries.rs.
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
                Ok(FnArgs::from((batch.codes, batch.values)))
            })?;
        Ok(Completer {
            shared: Arc::new(CompleterShared { done, waker }),
        })
    }
}

impl Completer {
    /// Runs `op` on the tokio thread as operation `id` (src/node/entries.rs).
    pub(crate) fn spawn<F, T>(&self, id: u32, op: F)
    where
        T: Into<Reply> + Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        self.shared.run(id, op);
    }
}

/// The tokio engine for the operations: the endpoint's shared connection
/// (or a lane of its own), tokio's timer.
pub(crate) struct Tokio;

/// Where a tokio operation's connections come from; a lane goes back to
/// its target when the operation ends.
pub(crate) struct TokioRoute {
    _lane: Option<Lane>,
    conn: Arc<SharedConnection>,
}

impl Engine for Tokio {
    type Conn = crate::transport::connection::Conn;
    type Route = TokioRoute;

    fn shared(endpoint: u32) -> Result<TokioRoute> {
        Ok(TokioRoute {
            _lane: None,
            conn: Arc::clone(&target(endpoint)?.shared),
        })
    }

    fn lane(_endpoint: u32, target: &Arc<Target>) -> TokioRoute {
        let lane = target.lane();
        TokioRoute {
            conn: Arc::clone(lane.conn()),
            _lane: Some(lane),
        }
    }

    fn connect(route: &TokioRoute) -> impl Future<Output = Result<Self::Conn>> {
        route.conn.get()
    }

    fn conn_id(conn: &Self::Conn) -> u64 {
        conn.generation()
    }

    fn timer() -> &'static dyn Timer {
        &TokioTimer
    }
}
