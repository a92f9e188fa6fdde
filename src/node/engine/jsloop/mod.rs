//! The JS-thread engine: lock operations run on the calling thread's own
//! libuv loop, so an operation crosses no thread. `LoopEngine` is its napi
//! registration (as `Completer` is the tokio engine's), and `Loop` what it
//! gives the operations (src/node/entries.rs declares them once); see
//! reactor.rs for the loop's state, conn.rs for the connections and
//! loopconn.rs for the `ConnectionLike` the operations run on.

mod batch;
mod conn;
mod connect;
mod dispatch;
mod executor;
mod lookups;
mod loopconn;
mod pending;
mod reactor;
mod tls;
mod transport;
mod uv;
mod wheel;

use std::cell::RefCell;
use std::ptr;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use crate::node::engine::contract::Engine;
use crate::node::targets::Target;
use crate::node::wire::done::{Done, DoneArgs, Item, Reply};
use crate::node::wire::error::Thrown;
use crate::waiting::timer::Timer;
use loopconn::LoopConn;
use reactor::{LoopTimer, Sink};

/// One environment's `onDone`, held weakly, and the async context its
/// calls run in.
struct JsSink {
    env: sys::napi_env,
    on_done: sys::napi_ref,
    context: sys::napi_async_context,
    done: RefCell<Done>,
}

impl Sink for JsSink {
    fn env(&self) -> *mut std::ffi::c_void {
        self.env.cast()
    }

    fn done(&self) -> &RefCell<Done> {
        &self.done
    }

    fn deliver(&self, batch: Done) {
        // Called on the environment's own thread from a libuv callback, outside any
        // JavaScript frame: a handle scope is opened for the values made here and
        // closed before returning; `napi_make_callback` gives the call a callback
        // scope, so promise reactions run when it returns (nodejs/node#15604).
        // SAFETY: `env`, `on_done` and `context` live until the environment's cleanup
        // hook, which removes this sink from the engine first; all on this thread.
        unsafe {
            let env = self.env;
            let mut scope = ptr::null_mut();
            if sys::napi_open_handle_scope(env, &mut scope) != sys::Status::napi_ok {
                return;
            }
            let mut func = ptr::null_mut();
            let mut recv = ptr::null_mut();
            // A collected onDone (its environment going away) or a failed call
            // leaves `func` or `recv` unusable: nothing is called then.
            let found = sys::napi_get_reference_value(env, self.on_done, &mut func)
                == sys::Status::napi_ok
                && !func.is_null()
                && sys::napi_get_global(env, &mut recv) == sys::Status::napi_ok
                && !recv.is_null();
            if found {
                let codes = Vec::<u32>::to_napi_value(env, batch.codes);
                let values = Vec::<Item>::to_napi_value(env, batch.values);
                if let (Ok(codes), Ok(values)) = (codes, values) {
                    let argv = [codes, values];
                    let mut result = ptr::null_mut();
                    let status = sys::napi_make_callback(
                        env,
                        self.context,
                        recv,
                        func,
                        2,
                        argv.as_ptr(),
                        &mut result,
                    );
                    if status == sys::Status::napi_pending_exception {
                        // onDone threw (a bug): surface it as Node would.
                        let mut exception = ptr::null_mut();
                        sys::napi_get_and_clear_last_exception(env, &mut exception);
                        sys::napi_fatal_exception(env, exception);
                    }
                }
            }
            sys::napi_close_handle_scope(env, scope);
        }
    }
}

/// Registers this environment's `onDone(codes, errors)`, which receives
/// the environment's finished operations exactly as from `Completer`.
#[napi]
pub struct LoopEngine {
    _sink: Rc<JsSink>,
}

#[napi]
impl LoopEngine {
    /// Whether this process's libuv can be used (Deno has none; the
    /// JavaScript side also rules out Bun, whose `uv_*` symbols abort).
    #[napi(catch_unwind)]
    pub fn available() -> bool {
        uv::uv().is_some()
    }

    #[napi(constructor, catch_unwind)]
    pub fn new(env: Env, on_done: Function<DoneArgs, ()>) -> napi::Result<Self> {
        if !LoopEngine::available() {
            return Err(napi::Error::from_reason(
                "the JS-thread engine needs libuv, which this runtime does not provide",
            ));
        }
        let lp = env.get_uv_event_loop()?.cast();
        let engine = reactor::start(lp).map_err(napi::Error::from_reason)?;
        let registered = LoopEngine::register(&env, &engine, on_done);
        if registered.is_err() {
            // A failed step must not leave an engine no environment owns (on a
            // worker, open handles abort Node at uv_loop_close).
            engine.shut_down_if_unused();
        }
        let sink = registered?;
        Ok(LoopEngine { _sink: sink })
    }
}

impl LoopEngine {
    /// Makes this environment's sink (a weak reference to `on_done` and an
    /// async context), adds it to `engine` and registers its cleanup hook.
    fn register(
        env: &Env,
        engine: &Rc<reactor::Engine>,
        on_done: Function<DoneArgs, ()>,
    ) -> napi::Result<Rc<JsSink>> {
        let raw_env = env.raw();
        let mut on_done_ref = ptr::null_mut();
        let mut context = ptr::null_mut();
        // The weak reference and the async context made here are released in the
        // cleanup hook, or right here when a later step fails.
        // SAFETY: inside a napi call on this environment's thread, its handle scope open.
        unsafe {
            let func = Function::<DoneArgs, ()>::to_napi_value(raw_env, on_done)?;
            check(sys::napi_create_reference(
                raw_env,
                func,
                0,
                &mut on_done_ref,
            ))?;
            let mut name = ptr::null_mut();
            let named = check(sys::napi_create_string_utf8(
                raw_env,
                c"redislock-rs".as_ptr(),
                12,
                &mut name,
            ))
            .and_then(|()| {
                check(sys::napi_async_init(
                    raw_env,
                    ptr::null_mut(),
                    name,
                    &mut context,
                ))
            });
            if let Err(e) = named {
                sys::napi_delete_reference(raw_env, on_done_ref);
                return Err(e);
            }
        }
        let sink = Rc::new(JsSink {
            env: raw_env,
            on_done: on_done_ref,
            context,
            done: RefCell::new(Done::default()),
        });
        let as_sink: Rc<dyn Sink> = sink.clone();
        engine.add_sink(Rc::clone(&as_sink));
        let hooked = env.add_env_cleanup_hook(Rc::clone(&as_sink), move |sink| {
            // Runs as the environment goes away; a panic must not unwind into Node.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if let Some(engine) = reactor::current() {
                    engine.remove_sink(&sink);
                }
            }));
            // SAFETY: the environment is being torn down on its own thread; these two
            // were made for it in `register` and are released once, here.
            unsafe {
                sys::napi_delete_reference(raw_env, on_done_ref);
                sys::napi_async_destroy(raw_env, context);
            }
        });
        if let Err(e) = hooked {
            engine.remove_sink(&as_sink);
            // SAFETY: as in the hook: made above, never handed out, released once.
            unsafe {
                sys::napi_delete_reference(raw_env, on_done_ref);
                sys::napi_async_destroy(raw_env, context);
            }
            return Err(e);
        }
        Ok(sink)
    }

    /// Spawns `op` as operation `id` (src/node/entries.rs); an error
    /// (thrown to JavaScript, which rejects the operation's promise) when
    /// this environment has no engine to report to, never a promise left
    /// pending.
    pub(crate) fn spawn<F, T>(env: &Env, id: u32, op: F) -> std::result::Result<(), Thrown>
    where
        T: Into<Reply> + 'static,
        F: std::future::Future<Output = crate::error::Result<T>> + 'static,
    {
        let sink = reactor::current().and_then(|e| Some((e.sink_for(env.raw().cast())?, e)));
        let Some((sink, engine)) = sink else {
            return Err(napi::Error::new(
                "ERR_INTERNAL",
                "the JS-thread engine is not running in this environment",
            ));
        };
        reactor::spawn_op(&engine, sink, id, op);
        Ok(())
    }
}

/// What this thread's JS-thread engine holds right now (for tests and
/// diagnostics): timers on its wheel, live tasks, open connections, the
/// bytes their buffers keep, host name lookups in flight.
#[napi(object)]
pub struct EngineStats {
    pub timers: u32,
    pub tasks: u32,
    pub connections: u32,
    pub buffered_bytes: f64,
    pub lookups: u32,
}

/// This thread's JS-thread engine's [`EngineStats`]; `null` when none runs.
#[napi(catch_unwind)]
pub fn engine_stats() -> Option<EngineStats> {
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    reactor::current().map(|e| {
        let s = e.stats();
        EngineStats {
            timers: clamp(s.timers),
            tasks: clamp(s.tasks),
            connections: clamp(s.connections),
            buffered_bytes: s.buffered as f64,
            lookups: clamp(s.lookups),
        }
    })
}

/// The JS-thread engine for the operations: the endpoint's connection on
/// this thread's loop, a libuv timer.
pub(crate) struct Loop;

impl Engine for Loop {
    type Conn = LoopConn;
    /// The endpoint's id: the connection is found on this thread's engine.
    type Route = u32;

    fn shared(endpoint: u32) -> crate::error::Result<u32> {
        Ok(endpoint)
    }

    /// No lanes here: JavaScript sends replica-acknowledged operations to
    /// the tokio engine (lib/redislock/lock.js, lib/redisson/redisson.js).
    fn lane(endpoint: u32, _target: &std::sync::Arc<Target>) -> u32 {
        endpoint
    }

    fn connect(route: &u32) -> impl std::future::Future<Output = crate::error::Result<LoopConn>> {
        LoopConn::connect(*route)
    }

    fn conn_id(conn: &LoopConn) -> u64 {
        conn.conn_id()
    }

    fn timer() -> &'static dyn Timer {
        &LoopTimer
    }
}

fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::from_reason(format!(
            "Node-API call failed (status {status})"
        )))
    }
}
