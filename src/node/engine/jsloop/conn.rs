//! One Redis connection of the JS-thread engine: its life from connecting
//! to closed, and the events the reactor dispatches to it (as a
//! [`Polled`]). A connected socket is polled by a `uv_poll_t` on the
//! thread's loop; its jobs live in files of their own: reaching the socket
//! (connect.rs), moving bytes plain or over TLS (transport.rs), batching
//! writes (batch.rs), matching replies to commands (dispatch.rs), the reply
//! queue and its deadlines (pending.rs). Operations reach it only through
//! `LoopConn` (loopconn.rs).
//!
//! Connecting: IP addresses and Unix sockets connect at once (non-blocking);
//! a host name is resolved on a short-lived thread, which wakes the loop.
//! `AUTH`/`SELECT` are the first commands in the pipeline, bounded by the
//! connect timeout; the operations' commands queue behind them. Over TLS
//! the bytes go through a rustls session (tls.rs), which holds commands
//! until its handshake is done; the connection is usable once both are.
//!
//! Failure rules, as the tokio engine's: a broken socket fails every
//! command on it with an I/O error and the next call connects afresh; a
//! reply past its deadline fails that command with a timeout and *retires*
//! the connection (new operations get a new one) while commands already
//! bound to it, such as an acquire's clean-up queued behind its `SET`, still
//! go through it; a retired connection closes once no command waits on it.

use std::any::Any;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use redis::{Cmd, RedisResult, Value};
use socket2::SockAddr;
use tokio::sync::oneshot;

use super::batch::Batch;
use super::connect::{self, Route};
use super::dispatch::dispatch;
use super::pending::{io_err, Queue};
use super::reactor::{self, Due, Engine, Polled};
use super::transport::{Transport, READ_CHUNK};
use super::uv::{self, Handle, Uv};
use crate::transport::endpoint::Endpoint;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Resolving,
    Connecting,
    Open,
    Closed,
}

pub(super) struct Conn {
    id: u64,
    /// The endpoint's id (see `node::connect::RedisConnection::id`) and settings.
    endpoint_id: u32,
    endpoint: Arc<Endpoint>,
    phase: Phase,
    /// The socket, plain or through TLS, once a connect is under way.
    transport: Option<Transport>,
    poll: *mut Handle,
    events: i32,
    /// Addresses still to try (a host name may resolve to several).
    addrs: VecDeque<SocketAddr>,
    connect_deadline: Instant,
    batch: Batch,
    input: Vec<u8>,
    pending: Queue,
    /// When a deadline check is on the wheel.
    check_at: Option<Instant>,
    retired: bool,
    /// Operations waiting for the connection to be usable (connected and
    /// past AUTH/SELECT): told the outcome once.
    ready_waiters: Vec<oneshot::Sender<Result<(), String>>>,
    /// Every AUTH/SELECT reply has come in and TLS is up (a later failure
    /// is "lost"). Never goes back to false.
    handshaken: bool,
    /// Why it closed, for an operation that finds it closed.
    error: Option<String>,
}

impl Conn {
    /// The connection new operations on `endpoint_id` use: the current
    /// one, or a new one opened now.
    pub(super) fn for_endpoint(
        engine: &Engine,
        endpoint_id: u32,
        endpoint: &Arc<Endpoint>,
    ) -> Rc<RefCell<Conn>> {
        let existing = engine.current.borrow().get(&endpoint_id).copied();
        let found = existing.and_then(|id| conn_of(engine, id));
        found.unwrap_or_else(|| Conn::open(engine, endpoint_id, endpoint))
    }

    /// A new connection to `endpoint`, connecting, with its handshake
    /// queued. Registered as the endpoint's current connection.
    fn open(engine: &Engine, endpoint_id: u32, endpoint: &Arc<Endpoint>) -> Rc<RefCell<Conn>> {
        let id = engine.next_conn_id();
        let now = Instant::now();
        let mut conn = Conn {
            id,
            endpoint_id,
            endpoint: Arc::clone(endpoint),
            phase: Phase::Resolving,
            transport: None,
            poll: std::ptr::null_mut(),
            events: 0,
            addrs: VecDeque::new(),
            connect_deadline: now + endpoint.connect_timeout,
            batch: Batch::new(),
            input: Vec::with_capacity(READ_CHUNK),
            pending: Queue::default(),
            check_at: None,
            retired: false,
            ready_waiters: Vec::new(),
            handshaken: false,
            error: None,
        };
        if let Some(pass) = &endpoint.password {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = &endpoint.username {
                auth.arg(user);
            }
            auth.arg(pass);
            conn.queue_handshake(&auth);
        }
        if endpoint.db != 0 {
            conn.queue_handshake(redis::cmd("SELECT").arg(endpoint.db));
        }
        let conn = Rc::new(RefCell::new(conn));
        engine
            .conns
            .borrow_mut()
            .insert(id, Rc::clone(&conn) as Rc<dyn Polled>);
        engine.current.borrow_mut().insert(endpoint_id, id);
        Conn::arm_check(&conn, engine);
        match connect::route(&endpoint.address) {
            Route::Unix(addr) => Conn::connect_to(&conn, engine, addr),
            Route::Invalid(why) => Conn::fail(&conn, engine, io::ErrorKind::InvalidInput, &why),
            Route::Ip(addr) => {
                conn.borrow_mut().addrs.push_back(addr);
                Conn::next_addr(&conn, engine);
            }
            Route::Lookup(host, port) => Conn::resolve(&conn, engine, host, port),
        }
        conn
    }

    pub(super) fn id(&self) -> u64 {
        self.id
    }

    /// Why it is closed, if it is (e.g. it failed at once: no such socket).
    pub(super) fn closed_error(&self) -> Option<String> {
        (self.phase == Phase::Closed).then(|| self.error.clone().unwrap_or_else(|| "closed".into()))
    }

    /// Where to hear that it is usable, unless it is already.
    pub(super) fn wait_ready(&mut self) -> Option<oneshot::Receiver<Result<(), String>>> {
        (!self.is_ready()).then(|| {
            let (tx, rx) = oneshot::channel();
            self.ready_waiters.push(tx);
            rx
        })
    }

    /// Connected, and every AUTH/SELECT reply in. O(1): it is asked on
    /// every operation.
    fn is_ready(&self) -> bool {
        self.phase == Phase::Open
            && (self.handshaken
                || (self.pending.handshake_done()
                    && !self.transport.as_ref().is_some_and(|t| t.is_handshaking())))
    }

    /// Tells waiting operations the connection is usable, if it is.
    fn wake_ready(&mut self) {
        if self.is_ready() {
            self.handshaken = true;
            for tx in self.ready_waiters.drain(..) {
                let _ = tx.send(Ok(()));
            }
        }
    }

    fn queue_handshake(&mut self, cmd: &Cmd) {
        cmd.write_packed_command(self.batch.out());
        self.pending.push_handshake(self.connect_deadline);
    }

    /// Resolves `host` (see `connect::lookup`), then connects on this
    /// thread when the answer arrives. Connections to the same host and
    /// port share a lookup in flight (see `Lookups`), so a resolver that
    /// hangs holds one thread, not one per connect attempt.
    fn resolve(conn: &Rc<RefCell<Conn>>, engine: &Engine, host: String, port: u16) {
        let id = conn.borrow().id;
        let key = (host, port);
        if engine.lookups.join(&key, id) {
            return;
        }
        let answer = match connect::lookup(key.0.clone(), port) {
            Ok(answer) => answer,
            Err(e) => {
                engine.lookups.finish(&key);
                return Conn::fail(conn, engine, io::ErrorKind::Other, &e.to_string());
            }
        };
        engine.spawn(Box::pin(async move {
            let answer = answer.await;
            let Some(engine) = reactor::current() else {
                return;
            };
            for id in engine.lookups.finish(&key) {
                let Some(conn) = conn_of(&engine, id) else {
                    continue; // gave up meanwhile (connect timeout)
                };
                match &answer {
                    Ok(addrs) if !addrs.is_empty() => {
                        conn.borrow_mut().addrs.extend(addrs.iter().copied());
                        Conn::next_addr(&conn, &engine);
                    }
                    Ok(_) => Conn::fail(&conn, &engine, io::ErrorKind::NotFound, "no address"),
                    Err((kind, why)) => Conn::fail(&conn, &engine, *kind, why),
                }
            }
        }));
    }

    /// Tries the next resolved address, or fails when none is left.
    fn next_addr(conn: &Rc<RefCell<Conn>>, engine: &Engine) {
        let next = conn.borrow_mut().addrs.pop_front();
        match next {
            Some(addr) => Conn::connect_to(conn, engine, addr.into()),
            None => Conn::fail(
                conn,
                engine,
                io::ErrorKind::ConnectionRefused,
                "no address left",
            ),
        }
    }

    fn connect_to(conn: &Rc<RefCell<Conn>>, engine: &Engine, addr: SockAddr) {
        let sock = match connect::start(&addr) {
            Ok(sock) => sock,
            Err(e) => {
                let more = !conn.borrow().addrs.is_empty();
                return if more {
                    Conn::next_addr(conn, engine)
                } else {
                    Conn::fail(conn, engine, e.kind(), &e.to_string())
                };
            }
        };
        let mut c = conn.borrow_mut();
        let transport = match Transport::new(sock, &c.endpoint) {
            Ok(transport) => transport,
            Err(why) => {
                drop(c);
                return Conn::fail(conn, engine, io::ErrorKind::InvalidInput, &why);
            }
        };
        c.close_poll(engine.uv());
        let fd = std::os::fd::AsRawFd::as_raw_fd(transport.socket());
        // SAFETY: the loop is this thread's, and the socket stays open until after
        // this handle is closed (`close_poll` always runs before `transport` is dropped).
        let poll = unsafe {
            engine
                .uv()
                .new_poll(engine.lp, fd, reactor::id_as_data(c.id))
        };
        match poll {
            Ok(handle) => {
                c.poll = handle;
                c.transport = Some(transport);
                c.phase = Phase::Connecting;
                drop(c);
                Conn::set_events(conn, engine, uv::READABLE | uv::WRITABLE);
            }
            Err(e) => {
                drop(c);
                Conn::fail(conn, engine, io::ErrorKind::Other, &e);
            }
        }
    }

    fn set_events(conn: &Rc<RefCell<Conn>>, engine: &Engine, events: i32) {
        let mut c = conn.borrow_mut();
        if c.poll.is_null() || c.events == events {
            return;
        }
        // SAFETY: `c.poll` is a live poll handle owned by this connection.
        let started = unsafe { engine.uv().poll_start(c.poll, events, reactor::on_poll) };
        match started {
            Ok(()) => c.events = events,
            Err(e) => {
                drop(c);
                Conn::fail(conn, engine, io::ErrorKind::Other, &e);
            }
        }
    }

    fn close_poll(&mut self, uv: &Uv) {
        if !self.poll.is_null() {
            // SAFETY: live, owned by this connection, freed by its close callback, and
            // forgotten right below, so it is closed exactly once.
            unsafe { uv.close(self.poll, close_poll_handle) };
            self.poll = std::ptr::null_mut();
            self.events = 0;
        }
    }

    /// Bytes its buffers hold on to (capacity), for diagnostics.
    fn buffered(&self) -> usize {
        self.batch.capacity() + self.input.capacity()
    }

    /// Closes the socket and fails whatever still waits on it. The one
    /// close path of a connection.
    fn close(&mut self, uv: &Uv) {
        self.close_poll(uv);
        self.transport = None;
        self.phase = Phase::Closed;
        for tx in self.ready_waiters.drain(..) {
            let _ = tx.send(Err("the connection was closed".into()));
        }
        for tx in self.pending.take_waiting() {
            let _ = tx.send(Err(io_err(
                io::ErrorKind::ConnectionAborted,
                "the connection was closed".into(),
            )));
        }
    }

    /// Breaks the connection: every waiting command fails with this error,
    /// the endpoint's next call connects afresh.
    fn fail(conn: &Rc<RefCell<Conn>>, engine: &Engine, kind: io::ErrorKind, why: &str) {
        let mut c = conn.borrow_mut();
        let what = if c.handshaken { "lost" } else { "failed" };
        let msg = format!(
            "Redis connection to {} {what}: {why}",
            c.endpoint.describe()
        );
        c.error = Some(msg.clone());
        c.close_poll(engine.uv());
        c.transport = None;
        c.phase = Phase::Closed;
        let pending = c.pending.take_waiting();
        let waiters = std::mem::take(&mut c.ready_waiters);
        let id = c.id;
        let endpoint = c.endpoint_id;
        drop(c);
        for tx in waiters {
            let _ = tx.send(Err(msg.clone()));
        }
        Conn::forget(engine, id, endpoint);
        for tx in pending {
            let _ = tx.send(Err(io_err(kind, msg.clone())));
        }
    }

    fn forget(engine: &Engine, id: u64, endpoint: u32) {
        engine.conns.borrow_mut().remove(&id);
        Conn::retire_in(engine, id, endpoint);
    }

    fn retire_in(engine: &Engine, id: u64, endpoint: u32) {
        let mut current = engine.current.borrow_mut();
        if current.get(&endpoint) == Some(&id) {
            current.remove(&endpoint);
        }
    }

    /// Queues a command (written by `write`) expecting `replies` replies;
    /// `rx` collects a receiver per reply.
    pub(super) fn push(
        conn: &Rc<RefCell<Conn>>,
        engine: &Engine,
        write: impl FnOnce(&mut Vec<u8>),
        replies: usize,
        mut rx: impl FnMut(oneshot::Receiver<RedisResult<Value>>),
    ) {
        let mut c = conn.borrow_mut();
        write(c.batch.out());
        let deadline = Instant::now() + c.endpoint.command_timeout;
        for _ in 0..replies {
            rx(c.pending.push(deadline));
        }
        let open = c.phase == Phase::Open;
        let queued = c.batch.queued(open);
        let id = c.id;
        drop(c);
        if queued.flush_at_turn_end {
            engine.mark_dirty(id);
        }
        if queued.write_now {
            Conn::flush(conn, engine);
        }
        Conn::arm_check(conn, engine);
    }

    /// Puts a deadline check on the wheel for the earliest live deadline,
    /// unless one at or before it is there already. (An earlier check left
    /// on the wheel fires harmlessly and re-arms.)
    fn arm_check(conn: &Rc<RefCell<Conn>>, engine: &Engine) {
        let mut c = conn.borrow_mut();
        let next = if c.handshaken {
            c.pending.next_deadline()
        } else {
            Some(c.connect_deadline)
        };
        if let Some(at) = next.filter(|at| c.check_at.is_none_or(|armed| *at < armed)) {
            c.check_at = Some(at);
            let id = c.id;
            drop(c);
            engine.at(at, Due::Check(id));
        }
    }

    /// The wheel says a deadline may have passed.
    fn check_deadlines(conn: &Rc<RefCell<Conn>>, engine: &Engine, now: Instant) {
        let mut c = conn.borrow_mut();
        c.check_at = None;
        // Connecting (socket, TLS handshake, AUTH/SELECT) is bounded by the
        // connect timeout: a connect failure, not a command timeout. A TCP
        // connection that is up is not yet usable: a server that accepts
        // and never answers the TLS handshake must time out here too.
        if !c.handshaken {
            if now < c.connect_deadline {
                drop(c);
                return Conn::arm_check(conn, engine);
            }
            let ms = c.endpoint.connect_timeout.as_millis();
            let tls_handshaking = c.transport.as_ref().is_some_and(|t| t.is_handshaking());
            let why = connect::timed_out(ms, c.phase == Phase::Open, tls_handshaking);
            drop(c);
            return Conn::fail(conn, engine, io::ErrorKind::NotConnected, &why);
        }
        let expired = c.pending.expire(now);
        if !expired.is_empty() && !c.retired {
            c.retired = true;
            let (id, endpoint) = (c.id, c.endpoint_id);
            drop(c);
            Conn::retire_in(engine, id, endpoint);
            c = conn.borrow_mut();
        }
        let ms = c.endpoint.command_timeout.as_millis();
        let idle = c.pending.idle();
        let (retired, id) = (c.retired, c.id);
        drop(c);
        for tx in expired {
            let _ = tx.send(Err(io_err(
                io::ErrorKind::TimedOut,
                format!("no reply within {ms} ms"),
            )));
        }
        if retired && idle {
            // Nobody waits on it, but a clean-up may still be in flight
            // behind what timed out (a slow link delivers both late): keep
            // the socket a while for their replies, then close.
            let mut c = conn.borrow_mut();
            let grace = c.pending.linger_until(now, c.endpoint.command_timeout);
            if now >= grace || c.pending.is_empty() {
                let endpoint = c.endpoint_id;
                c.close(engine.uv());
                drop(c);
                Conn::forget(engine, id, endpoint);
            } else {
                c.check_at = Some(grace);
                drop(c);
                engine.at(grace, Due::Check(id));
            }
        } else {
            Conn::arm_check(conn, engine);
        }
    }

    /// The end-of-turn flush: also closes the turn's command count.
    fn flush_turn(conn: &Rc<RefCell<Conn>>, engine: &Engine) {
        conn.borrow_mut().batch.end_turn();
        Conn::flush(conn, engine);
    }

    /// Writes buffered output; what the socket does not take now waits for
    /// writability.
    fn flush(conn: &Rc<RefCell<Conn>>, engine: &Engine) {
        let mut c = conn.borrow_mut();
        c.batch.writing();
        if c.phase != Phase::Open {
            return;
        }
        let c2 = &mut *c;
        let (out, written) = c2.batch.parts();
        let outcome = match c2.transport.as_mut() {
            Some(transport) => transport.write(out, written),
            None => Ok(*written == out.len()),
        };
        let done = match outcome {
            Ok(done) => done,
            Err((kind, why)) => {
                drop(c);
                return Conn::fail(conn, engine, kind, &why);
            }
        };
        c.batch.compact();
        let events = if done {
            uv::READABLE
        } else {
            uv::READABLE | uv::WRITABLE
        };
        drop(c);
        Conn::set_events(conn, engine, events);
    }

    /// A readiness event from the poll handle.
    fn on_ready(conn: &Rc<RefCell<Conn>>, engine: &Engine, status: i32, events: i32) {
        let phase = conn.borrow().phase;
        if status < 0 && phase != Phase::Connecting {
            // libuv reports POLLERR as a bare status (UV_EBADF); the
            // socket's pending error says what happened (reset, refused, …).
            let pending = conn
                .borrow()
                .transport
                .as_ref()
                .and_then(|t| t.socket().take_error().ok().flatten());
            let (kind, why) = match pending {
                Some(e) => (e.kind(), e.to_string()),
                None => (
                    io::ErrorKind::Other,
                    format!("the socket failed (libuv poll status {status})"),
                ),
            };
            return Conn::fail(conn, engine, kind, &why);
        }
        if phase == Phase::Connecting {
            // libuv reports a failed connect as an error status (POLLERR);
            // the socket says why.
            if status >= 0 && events & uv::WRITABLE == 0 {
                return;
            }
            let outcome = conn
                .borrow()
                .transport
                .as_ref()
                .map(|t| t.socket().take_error());
            match outcome {
                Some(Ok(None)) => {
                    {
                        let mut c = conn.borrow_mut();
                        c.phase = Phase::Open;
                        c.wake_ready();
                    }
                    Conn::flush(conn, engine);
                    Conn::arm_check(conn, engine);
                }
                Some(Ok(Some(e))) | Some(Err(e)) => {
                    if conn.borrow().addrs.is_empty() {
                        return Conn::fail(conn, engine, e.kind(), &e.to_string());
                    }
                    return Conn::next_addr(conn, engine);
                }
                None => return,
            }
            return;
        }
        if phase != Phase::Open {
            return;
        }
        if events & uv::READABLE != 0 {
            Conn::read(conn, engine);
        }
        if events & uv::WRITABLE != 0 && conn.borrow().phase == Phase::Open {
            Conn::flush(conn, engine);
        }
    }

    fn read(conn: &Rc<RefCell<Conn>>, engine: &Engine) {
        let mut c = conn.borrow_mut();
        let c2 = &mut *c;
        let failure = c2.transport.as_mut().and_then(|t| t.read(&mut c2.input));
        // Replies that arrived before a close are still delivered.
        let out = dispatch(&mut c2.input, &mut c2.pending);
        if out.handshake_error.is_none() {
            c.wake_ready();
        }
        // TLS may have something to send now (its handshake), or be done with
        // it, so that the commands held back for it can go.
        let unwritten = c.batch.has_unwritten();
        let tls_pending = c
            .transport
            .as_ref()
            .is_some_and(|t| t.flush_after_read(unwritten));
        let retired_idle = c.retired && c.pending.idle();
        let (id, endpoint) = (c.id, c.endpoint_id);
        drop(c);
        for (tx, value) in out.delivered {
            let _ = tx.send(Ok(value));
        }
        if let Some(why) = out.handshake_error {
            return Conn::fail(conn, engine, io::ErrorKind::PermissionDenied, &why);
        }
        if let Some(why) = out.bad {
            return Conn::fail(conn, engine, io::ErrorKind::InvalidData, &why);
        }
        if let Some((kind, why)) = failure {
            return Conn::fail(conn, engine, kind, &why);
        }
        if tls_pending {
            Conn::flush(conn, engine);
        }
        if retired_idle {
            conn.borrow_mut().close(engine.uv());
            Conn::forget(engine, id, endpoint);
        }
    }
}

/// Connection `id` of `engine`, as this file's own type (the reactor holds
/// it as a [`Polled`]).
pub(super) fn conn_of(engine: &Engine, id: u64) -> Option<Rc<RefCell<Conn>>> {
    let polled = engine.conns.borrow().get(&id).cloned()?;
    polled.as_any().downcast::<RefCell<Conn>>().ok()
}

/// What the reactor asks of a connection: the events it dispatches by id.
impl Polled for RefCell<Conn> {
    fn flush_turn(self: Rc<Self>, engine: &Engine) {
        Conn::flush_turn(&self, engine);
    }

    fn check_deadlines(self: Rc<Self>, engine: &Engine, now: Instant) {
        Conn::check_deadlines(&self, engine, now);
    }

    fn on_ready(self: Rc<Self>, engine: &Engine, status: i32, events: i32) {
        Conn::on_ready(&self, engine, status, events);
    }

    fn close(&self, uv: &Uv) {
        self.borrow_mut().close(uv);
    }

    fn buffered(&self) -> usize {
        self.borrow().buffered()
    }

    fn as_any(self: Rc<Self>) -> Rc<dyn Any> {
        self
    }
}

unsafe extern "C" fn close_poll_handle(h: *mut Handle) {
    if let Some(uv) = uv::uv() {
        // SAFETY: `h` was allocated for a poll handle and is now closed.
        unsafe { uv.free(h, uv::POLL) };
    }
}
