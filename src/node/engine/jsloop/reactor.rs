//! The JS-thread engine's state: one per thread that runs a JavaScript
//! environment (the main thread, each worker), in a thread-local, driven
//! entirely by that thread's own libuv loop.
//!
//! - an executor (executor.rs): operation futures are polled on this
//!   thread, first at submission (so their command is buffered during the
//!   JavaScript call) and then whenever a reply, a timer or an off-thread
//!   wake-up arrives;
//! - a timer wheel (wheel.rs) behind one libuv timer: retry delays and
//!   reply deadlines;
//! - the connections, one per endpoint, each a socket polled by a
//!   `uv_poll_t`, held as [`Polled`] (conn.rs implements it);
//! - a prepare hook that writes what was buffered during a JavaScript turn
//!   before the loop blocks, and an async handle for wake-ups from other
//!   threads (name resolution);
//! - sinks: per JavaScript environment, the `onDone` function that receives
//!   finished operations in batches, called through `napi_make_callback` so
//!   promise reactions (microtasks) run right after.
//!
//! libuv handles carry no pointer into Rust memory (their data is unused or
//! a connection id); everything is found through the thread-local, so a
//! callback after shut-down finds nothing and does nothing. No handle is
//! ref'd: liveness while operations are pending is JavaScript's job.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures_util::FutureExt;

use super::executor::{Executor, Task};
use super::lookups::Lookups;
use super::uv::{self, Handle, Loop, Uv};
use super::wheel::{Key, Wheel};
use crate::node::wire::done::{settled, Done};
use crate::transport::endpoint::Endpoint;

/// Hashes our own small sequential ids (connection and endpoint ids) as
/// themselves: they are not attacker-chosen, and SipHash showed up in the
/// per-operation profile.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Rounds of run / deliver / flush in one engine turn (see `Engine::turn`).
const TURN_ROUNDS: usize = 8;

type IdMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// What a wheel entry does when due.
pub(crate) enum Due {
    Wake(Waker),
    /// Check a connection's deadlines.
    Check(u64),
}

/// What an engine holds at one moment (see `Engine::stats`).
pub(crate) struct Stats {
    pub timers: usize,
    pub tasks: usize,
    pub connections: usize,
    /// Bytes the connections' buffers hold on to.
    pub buffered: usize,
    /// Host name lookups in flight.
    pub lookups: usize,
}

/// What the reactor asks of a connection it polls, by id: its readiness
/// events, its deadline checks, its buffered output, closing. conn.rs
/// implements it; the reactor knows nothing else of connections.
pub(crate) trait Polled {
    /// Writes what was buffered during this turn.
    fn flush_turn(self: Rc<Self>, engine: &Engine);
    /// Its deadline check on the wheel is due.
    fn check_deadlines(self: Rc<Self>, engine: &Engine, now: Instant);
    /// A readiness event of its `uv_poll_t` (`status`, `events` as libuv
    /// gives them).
    fn on_ready(self: Rc<Self>, engine: &Engine, status: i32, events: i32);
    /// Closes it (the engine shuts down).
    fn close(&self, uv: &Uv);
    /// Bytes its buffers hold on to.
    fn buffered(&self) -> usize;
    /// Itself, for its own file to find its type again.
    fn as_any(self: Rc<Self>) -> Rc<dyn std::any::Any>;
}

/// Where one JavaScript environment's finished operations go.
pub(crate) trait Sink {
    /// The environment (`napi_env`) it belongs to.
    fn env(&self) -> *mut c_void;
    fn done(&self) -> &RefCell<Done>;
    /// Calls `onDone` with the batch (on this thread, in a callback scope).
    fn deliver(&self, batch: Done);
}

pub(crate) struct Engine {
    uv: &'static Uv,
    pub(crate) lp: *mut Loop,
    timer: *mut Handle,
    prepare: *mut Handle,
    wake: *mut Handle,
    /// The operations' futures, polled on this thread (executor.rs).
    executor: Executor,
    /// Retry delays and reply deadlines, behind `timer` (wheel.rs).
    wheel: Wheel<Due>,
    pub(crate) conns: RefCell<IdMap<u64, Rc<dyn Polled>>>,
    /// The connection new operations on an endpoint (by id) use.
    pub(crate) current: RefCell<IdMap<u32, u64>>,
    endpoints: RefCell<Vec<Option<Arc<Endpoint>>>>,
    /// Connections with buffered output.
    dirty: RefCell<Vec<u64>>,
    prepare_on: Cell<bool>,
    sinks: RefCell<Vec<Rc<dyn Sink>>>,
    /// Host name lookups in flight.
    pub(crate) lookups: Lookups,
}

use std::rc::Rc;

thread_local! {
    static ENGINE: RefCell<Option<Rc<Engine>>> = const { RefCell::new(None) };
}

/// The engine of this thread, if one runs. None too while the thread's
/// locals are being destroyed (a process exiting with operations pending:
/// dropping the engine drops their futures, whose timers ask for it here; a
/// panic in that destructor would abort the process).
pub(crate) fn current() -> Option<Rc<Engine>> {
    ENGINE.try_with(|e| e.borrow().clone()).ok().flatten()
}

/// The engine of this thread, started on `lp` if none runs yet.
pub(crate) fn start(lp: *mut Loop) -> Result<Rc<Engine>, String> {
    if let Some(engine) = current() {
        return Ok(engine);
    }
    let uv = uv::uv().ok_or("libuv is not available in this process")?;
    let executor = Executor::new();
    // Each handle is closed once: right here when a later one cannot be made
    // (the engine then never exists), else in `shut_down`.
    // SAFETY: `lp` is this thread's loop (napi_get_uv_event_loop, this env).
    let (timer, prepare, wake) = unsafe {
        let timer = uv.new_timer(lp, std::ptr::null_mut())?;
        let prepare = match uv.new_prepare(lp, std::ptr::null_mut()) {
            Ok(h) => h,
            Err(e) => {
                uv.close(timer, close_timer);
                return Err(e);
            }
        };
        let wake = match uv.new_async(lp, std::ptr::null_mut(), on_async) {
            Ok(h) => h,
            Err(e) => {
                uv.close(timer, close_timer);
                uv.close(prepare, close_prepare);
                return Err(e);
            }
        };
        (timer, prepare, wake)
    };
    executor.remote().set_wake(Some(wake));
    let engine = Rc::new(Engine {
        uv,
        lp,
        timer,
        prepare,
        wake,
        executor,
        wheel: Wheel::new(),
        conns: RefCell::new(IdMap::default()),
        current: RefCell::new(IdMap::default()),
        endpoints: RefCell::new(Vec::new()),
        dirty: RefCell::new(Vec::new()),
        prepare_on: Cell::new(false),
        sinks: RefCell::new(Vec::new()),
        lookups: Default::default(),
    });
    ENGINE.with(|e| *e.borrow_mut() = Some(Rc::clone(&engine)));
    Ok(engine)
}

// The close callbacks of the engine's three handles: libuv calls each once,
// when the handle is closed, on the loop's thread.
unsafe extern "C" fn close_timer(h: *mut Handle) {
    if let Some(uv) = uv::uv() {
        // SAFETY: `h` was allocated by `new_timer` and libuv is done with it (this is
        // its close callback); nothing refers to it any more.
        unsafe { uv.free(h, uv::TIMER) };
    }
}
unsafe extern "C" fn close_prepare(h: *mut Handle) {
    if let Some(uv) = uv::uv() {
        // SAFETY: as `close_timer`, for the prepare handle.
        unsafe { uv.free(h, uv::PREPARE) };
    }
}
unsafe extern "C" fn close_async(h: *mut Handle) {
    if let Some(uv) = uv::uv() {
        // SAFETY: as `close_timer`, for the async handle (already taken out of
        // `Remote::wake`, so no thread sends on it).
        unsafe { uv.free(h, uv::ASYNC) };
    }
}

impl Engine {
    pub(crate) fn uv(&self) -> &'static Uv {
        self.uv
    }

    /// The sink of environment `env`.
    pub(crate) fn sink_for(&self, env: *mut c_void) -> Option<Rc<dyn Sink>> {
        // One sink per environment: lib/native/bridge.js makes one LoopEngine
        // per loaded addon, shared by every copy of the package over it; the
        // newest wins should one environment ever register twice.
        self.sinks
            .borrow()
            .iter()
            .rev()
            .find(|s| s.env() == env)
            .cloned()
    }

    /// The endpoint with id `id` (cached per thread: no lock per operation).
    pub(crate) fn endpoint(&self, id: u32) -> crate::error::Result<Arc<Endpoint>> {
        if let Some(Some(e)) = self.endpoints.borrow().get(id as usize) {
            return Ok(Arc::clone(e));
        }
        let endpoint = Arc::clone(&crate::node::targets::target(id)?.endpoint);
        let mut cache = self.endpoints.borrow_mut();
        if cache.len() <= id as usize {
            cache.resize(id as usize + 1, None);
        }
        cache[id as usize] = Some(Arc::clone(&endpoint));
        Ok(endpoint)
    }

    pub(crate) fn add_sink(&self, sink: Rc<dyn Sink>) {
        self.sinks.borrow_mut().push(sink);
    }

    /// Forgets `sink` (its environment is going away); shuts the engine
    /// down when it was the last one.
    pub(crate) fn remove_sink(&self, sink: &Rc<dyn Sink>) {
        let empty = {
            let mut sinks = self.sinks.borrow_mut();
            sinks.retain(|s| !Rc::ptr_eq(s, sink));
            sinks.is_empty()
        };
        if empty {
            self.shut_down();
        }
    }

    /// Shuts the engine down if no environment uses it (its registration
    /// failed half-way).
    pub(crate) fn shut_down_if_unused(&self) {
        if self.sinks.borrow().is_empty() {
            self.shut_down();
        }
    }

    /// Closes every handle and socket and drops every task. The one close
    /// path of the engine's libuv handles.
    fn shut_down(&self) {
        // Gone already if the thread's locals are being destroyed.
        let _ = ENGINE.try_with(|e| e.borrow_mut().take());
        self.executor.remote().set_wake(None);
        let conns: Vec<_> = self.conns.borrow_mut().drain().map(|(_, c)| c).collect();
        for conn in conns {
            conn.close(self.uv);
        }
        // Dropping tasks may run destructors that look for the engine: it
        // is already gone from the thread-local, so they find nothing.
        self.executor.drop_tasks();
        self.wheel.clear();
        // SAFETY: the three handles were created in `start`, are live, and
        // are closed here exactly once (the engine is no longer reachable).
        unsafe {
            self.uv.close(self.timer, close_timer);
            self.uv.close(self.prepare, close_prepare);
            self.uv.close(self.wake, close_async);
        }
    }

    /// Runs `task` on this thread: polled once now, then on wake-ups.
    pub(crate) fn spawn(&self, task: Task) {
        self.executor.spawn(task);
    }

    /// Runs what is ready, hands finished operations to JavaScript, writes
    /// what that JavaScript issued. Called at the end of every callback.
    ///
    /// Bounded, so JavaScript that starts an operation from every outcome
    /// cannot hold the loop; what is left when the bound is reached (tasks
    /// woken, outcomes not yet delivered) is handed to the next loop turn
    /// through the async handle, never left for an unrelated event.
    fn turn(&self) {
        for _ in 0..TURN_ROUNDS {
            self.executor.run_ready();
            let delivered = self.deliver_done();
            self.flush();
            if !delivered && self.executor.remote().idle() {
                return;
            }
        }
        let undelivered = self
            .sinks
            .borrow()
            .iter()
            .any(|s| !s.done().borrow().is_empty());
        if undelivered || !self.executor.remote().idle() {
            self.executor.remote().notify();
        }
    }

    /// Hands every sink its finished operations; `true` when there were any.
    fn deliver_done(&self) -> bool {
        let sinks: Vec<Rc<dyn Sink>> = self.sinks.borrow().clone();
        let mut delivered = false;
        for sink in sinks {
            let batch = std::mem::take(&mut *sink.done().borrow_mut());
            if !batch.is_empty() {
                delivered = true;
                sink.deliver(batch);
            }
        }
        delivered
    }

    /// A new connection id, unique in the process (every worker thread's
    /// engine included): src/node/loaded.rs records scripts by it.
    pub(crate) fn next_conn_id(&self) -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// `conn` has output to write before the loop blocks.
    pub(crate) fn mark_dirty(&self, conn: u64) {
        self.dirty.borrow_mut().push(conn);
        if !self.prepare_on.replace(true) {
            // SAFETY: `prepare` is live until shut-down, which also removes
            // the engine from reach.
            unsafe { self.uv.prepare_start(self.prepare, on_prepare) };
        }
    }

    fn flush(&self) {
        loop {
            let dirty = std::mem::take(&mut *self.dirty.borrow_mut());
            if dirty.is_empty() {
                break;
            }
            for id in dirty {
                let conn = self.conns.borrow().get(&id).cloned();
                if let Some(conn) = conn {
                    conn.flush_turn(self);
                }
            }
        }
    }

    /// Schedules `due` at `at` on the wheel; the key removes it (`unschedule`).
    pub(crate) fn at(&self, at: Instant, due: Due) -> Key {
        let (key, arm) = self.wheel.schedule(at, due);
        if let Some(at) = arm {
            self.arm(at);
        }
        key
    }

    /// Takes an entry off the wheel (its timer stays armed and, if it was
    /// the earliest, fires once with nothing to do).
    fn unschedule(&self, key: Key) {
        self.wheel.remove(key);
    }

    /// What the engine holds now, for tests and diagnostics.
    pub(crate) fn stats(&self) -> Stats {
        let conns = self.conns.borrow();
        Stats {
            timers: self.wheel.len(),
            tasks: self.executor.live(),
            connections: conns.len(),
            buffered: conns.values().map(|c| c.buffered()).sum(),
            lookups: self.lookups.len(),
        }
    }

    fn arm(&self, at: Instant) {
        let wait = at.saturating_duration_since(Instant::now());
        // libuv counts whole milliseconds; round up so a timer never fires
        // before its deadline.
        let ms = wait.as_nanos().div_ceil(1_000_000) as u64;
        // SAFETY: `timer` is live until shut-down.
        unsafe { self.uv.timer_start(self.timer, on_timer, ms) };
    }

    fn fire_due(&self) {
        let now = Instant::now();
        self.wheel.fired();
        while let Some(due) = self.wheel.pop_due(now) {
            match due {
                Due::Wake(waker) => waker.wake(),
                Due::Check(id) => {
                    let conn = self.conns.borrow().get(&id).cloned();
                    if let Some(conn) = conn {
                        conn.check_deadlines(self, now);
                    }
                }
            }
        }
        if let Some(at) = self.wheel.rearm() {
            self.arm(at);
        }
    }
}

/// Runs `f` on this thread's engine inside one engine turn.
fn with_turn(f: impl FnOnce(&Engine)) {
    if let Some(engine) = current() {
        // Wake-ups from here on are picked up by this turn: no loop wake-up.
        let remote = engine.executor.remote();
        let outer = remote.processing.swap(true, Ordering::AcqRel);
        let guarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f(&engine);
            engine.turn();
        }));
        if !outer {
            remote.processing.store(false, Ordering::Release);
            // Anything woken after the turn's last look goes to the next one.
            if !remote.idle() {
                remote.notify();
            }
        }
        // A panic must not unwind into libuv (undefined behaviour); the
        // operations it concerned settle through their own guards.
        drop(guarded);
    }
}

unsafe extern "C" fn on_timer(_h: *mut Handle) {
    with_turn(|e| e.fire_due());
}

unsafe extern "C" fn on_prepare(_h: *mut Handle) {
    with_turn(|e| {
        e.prepare_on.set(false);
        // SAFETY: `prepare` is live while the engine is reachable.
        unsafe { e.uv.prepare_stop(e.prepare) };
    });
}

unsafe extern "C" fn on_async(_h: *mut Handle) {
    with_turn(|_| {});
}

/// A readiness event on connection `data` (its id, not a pointer).
pub(crate) unsafe extern "C" fn on_poll(h: *mut Handle, status: i32, events: i32) {
    let Some(uv) = uv::uv() else { return };
    // SAFETY: `h` is the live poll handle libuv is calling back for.
    let id = unsafe { uv.data(h) } as usize as u64;
    with_turn(|e| {
        let conn = e.conns.borrow().get(&id).cloned();
        if let Some(conn) = conn {
            conn.on_ready(e, status, events);
        }
    });
}

/// A connection id as handle data.
pub(crate) fn id_as_data(id: u64) -> *mut c_void {
    id as usize as *mut c_void
}

/// [`crate::waiting::timer::Timer`] on the engine's wheel.
pub(crate) struct LoopTimer;

impl crate::waiting::timer::Timer for LoopTimer {
    fn sleep(&self, duration: Duration) -> futures_util::future::BoxFuture<'static, ()> {
        Sleep {
            at: Instant::now() + duration,
            scheduled: None,
        }
        .boxed()
    }
}

/// A pause on the wheel; dropped before its deadline (a wait woken early or
/// cancelled), it takes its entry off the wheel.
struct Sleep {
    at: Instant,
    /// Its wheel entry, once scheduled.
    scheduled: Option<Key>,
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        if self.scheduled.is_none() {
            let Some(engine) = current() else {
                // No engine (shut down): nothing will ever wake us; end now.
                return Poll::Ready(());
            };
            self.scheduled = Some(engine.at(self.at, Due::Wake(cx.waker().clone())));
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let (Some(key), Some(engine)) = (self.scheduled.take(), current()) {
            engine.unschedule(key);
        }
    }
}

/// Runs `op` as an operation of `sink`: its outcome is reported as
/// operation `id`, and a panic inside it settles it as an internal error.
pub(crate) fn spawn_op<F, T>(engine: &Engine, sink: Rc<dyn Sink>, id: u32, op: F)
where
    T: Into<crate::node::wire::done::Reply> + 'static,
    F: Future<Output = crate::error::Result<T>> + 'static,
{
    let task = settled(op).map(move |outcome| sink.done().borrow_mut().record(id, outcome));
    engine.spawn(Box::pin(task));
}
