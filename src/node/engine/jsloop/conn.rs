//! One Redis connection of the JS-thread engine: a non-blocking socket
//! polled by a `uv_poll_t` on the thread's loop, a write buffer flushed
//! once per loop turn, and replies framed (`crate::transport::resp`) and parsed
//! (`redis::parse_redis_value`) in order, each to the oneshot its command
//! is waiting on.
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
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt;
use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use socket2::{Domain, SockAddr, Socket, Type};
use tokio::sync::oneshot;

use super::reactor::{self, Due, Engine, Polled};
use super::uv::{self, Handle, Uv};
use crate::transport::endpoint::{Address, Endpoint};
use crate::transport::resp;

type Reply = oneshot::Sender<RedisResult<Value>>;

/// Most bytes read per readiness event, so one busy socket cannot hold the
/// loop; the rest is read on the next turn (the poll stays readable).
const READ_BUDGET: usize = 1 << 20;
const READ_CHUNK: usize = 64 * 1024;
/// When to write before the turn ends: once a quarter of the previous
/// turn's commands (at least 4) are waiting. JavaScript issues a turn's
/// commands one after another (Bluebird settles a whole batch in one check
/// phase); written all at the end, Redis waits for the whole batch while this
/// thread issues it, and then this thread waits for Redis. Written in
/// quarters, the two work at the same time. Measured on this 2-vCPU VM
/// (benchmark/NOTES.md, §8 item 9): 128 workers ~113k -> ~170-226k
/// cycles/s, 16 workers ~51k -> ~74-122k; a divisor of 2 or 8 did worse.
const EARLY_DIVISOR: usize = 4;
const EARLY_MIN: usize = 4;

fn early_after(last_turn: usize) -> usize {
    (last_turn / EARLY_DIVISOR).max(EARLY_MIN)
}

/// Least time a retired connection stays open for late replies.
const RETIRED_LINGER: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Resolving,
    Connecting,
    Open,
    Closed,
}

struct Pending {
    /// `None` once the caller gave up (timed out); the reply is discarded.
    tx: Option<Reply>,
    deadline: Instant,
    /// `AUTH`/`SELECT`: an error reply breaks the connection.
    handshake: bool,
}

pub(crate) struct Conn {
    id: u64,
    /// The endpoint's id (see `node::connect::RedisConnection::id`) and settings.
    endpoint_id: u32,
    endpoint: Arc<Endpoint>,
    phase: Phase,
    sock: Option<Socket>,
    /// The TLS session over `sock`, for a TLS endpoint (see tls.rs).
    tls: Option<Box<rustls::ClientConnection>>,
    poll: *mut Handle,
    events: i32,
    /// Addresses still to try (a host name may resolve to several).
    addrs: VecDeque<SocketAddr>,
    connect_deadline: Instant,
    out: Vec<u8>,
    written: usize,
    input: Vec<u8>,
    pending: VecDeque<Pending>,
    /// When a deadline check is on the wheel.
    check_at: Option<Instant>,
    retired: bool,
    /// Operations waiting for the connection to be usable (connected and
    /// past AUTH/SELECT): told the outcome once.
    ready_waiters: Vec<oneshot::Sender<Result<(), String>>>,
    /// Queued for the engine's next flush.
    flush_queued: bool,
    /// Commands queued this turn, in the previous turn, and not yet written.
    turn_cmds: usize,
    last_turn_cmds: usize,
    unsent_cmds: usize,
    /// Every AUTH/SELECT reply has come in and TLS is up (a later failure
    /// is "lost"). Never goes back to false.
    handshaken: bool,
    /// AUTH/SELECT replies still to come (their entries lead `pending`).
    handshake_left: usize,
    /// Why it closed, for an operation that finds it closed.
    error: Option<String>,
}

fn io_err(kind: io::ErrorKind, msg: String) -> RedisError {
    RedisError::from(io::Error::new(kind, msg))
}

impl Conn {
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
            sock: None,
            tls: None,
            poll: std::ptr::null_mut(),
            events: 0,
            addrs: VecDeque::new(),
            connect_deadline: now + endpoint.connect_timeout,
            out: Vec::with_capacity(READ_CHUNK),
            written: 0,
            input: Vec::with_capacity(READ_CHUNK),
            pending: VecDeque::new(),
            check_at: None,
            retired: false,
            ready_waiters: Vec::new(),
            flush_queued: false,
            turn_cmds: 0,
            last_turn_cmds: 0,
            unsent_cmds: 0,
            handshaken: false,
            handshake_left: 0,
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
        match &endpoint.address {
            Address::Unix(path) => match SockAddr::unix(path) {
                Ok(addr) => Conn::connect_to(&conn, engine, addr),
                Err(e) => Conn::fail(&conn, engine, io::ErrorKind::InvalidInput, &e.to_string()),
            },
            Address::Tcp { host, port } => match host.parse::<IpAddr>() {
                Ok(ip) => {
                    conn.borrow_mut()
                        .addrs
                        .push_back(SocketAddr::new(ip, *port));
                    Conn::next_addr(&conn, engine);
                }
                Err(_) => Conn::resolve(&conn, engine, host.clone(), *port),
            },
        }
        conn
    }

    /// Connected, and every AUTH/SELECT reply in. O(1): it is asked on
    /// every operation.
    fn is_ready(&self) -> bool {
        self.phase == Phase::Open
            && (self.handshaken
                || (self.handshake_left == 0
                    && !self.tls.as_ref().is_some_and(|t| t.is_handshaking())))
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
        cmd.write_packed_command(&mut self.out);
        self.handshake_left += 1;
        self.pending.push_back(Pending {
            tx: None,
            deadline: self.connect_deadline,
            handshake: true,
        });
    }

    /// Resolves `host` on a short-lived thread (getaddrinfo blocks), then
    /// connects on this thread when the answer arrives. Connections to the
    /// same host and port share a lookup in flight (see `Lookups`), so a
    /// resolver that hangs holds one thread, not one per connect attempt.
    fn resolve(conn: &Rc<RefCell<Conn>>, engine: &Engine, host: String, port: u16) {
        let id = conn.borrow().id;
        let key = (host, port);
        if engine.lookups.join(&key, id) {
            return;
        }
        let (tx, rx) = oneshot::channel();
        let name = key.0.clone();
        let spawned = std::thread::Builder::new()
            .name("redislock-rs-dns".into())
            .spawn(move || {
                let answer = (name.as_str(), port)
                    .to_socket_addrs()
                    .map(Vec::from_iter)
                    .map_err(|e| (e.kind(), e.to_string()));
                let _ = tx.send(answer);
            });
        if let Err(e) = spawned {
            engine.lookups.finish(&key);
            return Conn::fail(conn, engine, io::ErrorKind::Other, &e.to_string());
        }
        engine.spawn(Box::pin(async move {
            let answer = rx
                .await
                .unwrap_or_else(|_| Err((io::ErrorKind::Other, "resolver gone".into())));
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
        let started = (|| -> io::Result<Socket> {
            let domain = if addr.is_unix() {
                Domain::UNIX
            } else {
                Domain::for_address(addr.as_socket().ok_or(io::ErrorKind::InvalidInput)?)
            };
            let sock = Socket::new(domain, Type::STREAM, None)?;
            sock.set_nonblocking(true)?;
            if !addr.is_unix() {
                sock.set_tcp_nodelay(true)?;
            }
            match sock.connect(&addr) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(EINPROGRESS) => {}
                // On a Unix socket, EAGAIN is no connect under way: the
                // server's accept backlog is full, and this attempt failed.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && addr.is_unix() => {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!("{e} (the server's accept backlog is full)"),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            Ok(sock)
        })();
        let sock = match started {
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
        if let (Some(settings), Address::Tcp { host, .. }) = (&c.endpoint.tls, &c.endpoint.address)
        {
            match super::tls::connect(settings, host) {
                Ok(session) => c.tls = Some(Box::new(session)),
                Err(why) => {
                    drop(c);
                    return Conn::fail(conn, engine, io::ErrorKind::InvalidInput, &why);
                }
            }
        }
        c.close_poll(engine.uv());
        let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
        // SAFETY: the loop is this thread's, and the socket stays open until after
        // this handle is closed (`close_poll` always runs before `sock` is dropped).
        let poll = unsafe {
            engine
                .uv()
                .new_poll(engine.lp, fd, reactor::id_as_data(c.id))
        };
        match poll {
            Ok(handle) => {
                c.poll = handle;
                c.sock = Some(sock);
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
    pub(crate) fn buffered(&self) -> usize {
        self.out.capacity() + self.input.capacity()
    }

    /// Closes the socket and fails whatever still waits on it. The one
    /// close path of a connection.
    pub(crate) fn close(&mut self, uv: &Uv) {
        self.close_poll(uv);
        self.sock = None;
        self.tls = None;
        self.phase = Phase::Closed;
        for tx in self.ready_waiters.drain(..) {
            let _ = tx.send(Err("the connection was closed".into()));
        }
        for p in self.pending.drain(..) {
            if let Some(tx) = p.tx {
                let _ = tx.send(Err(io_err(
                    io::ErrorKind::ConnectionAborted,
                    "the connection was closed".into(),
                )));
            }
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
        c.sock = None;
        c.tls = None;
        c.phase = Phase::Closed;
        let pending: Vec<_> = c.pending.drain(..).collect();
        let waiters = std::mem::take(&mut c.ready_waiters);
        let id = c.id;
        let endpoint = c.endpoint_id;
        drop(c);
        for tx in waiters {
            let _ = tx.send(Err(msg.clone()));
        }
        Conn::forget(engine, id, endpoint);
        for p in pending {
            if let Some(tx) = p.tx {
                let _ = tx.send(Err(io_err(kind, msg.clone())));
            }
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
    fn push(
        conn: &Rc<RefCell<Conn>>,
        engine: &Engine,
        write: impl FnOnce(&mut Vec<u8>),
        replies: usize,
        mut rx: impl FnMut(oneshot::Receiver<RedisResult<Value>>),
    ) {
        let mut c = conn.borrow_mut();
        write(&mut c.out);
        let deadline = Instant::now() + c.endpoint.command_timeout;
        for _ in 0..replies {
            let (tx, r) = oneshot::channel();
            c.pending.push_back(Pending {
                tx: Some(tx),
                deadline,
                handshake: false,
            });
            rx(r);
        }
        // One flush per connection per turn, however many commands.
        let flush = c.phase == Phase::Open && !std::mem::replace(&mut c.flush_queued, true);
        c.turn_cmds += 1;
        c.unsent_cmds += 1;
        // Early write: a quarter of the last turn's commands are waiting, so
        // Redis can start on them while this thread issues the rest.
        let early = c.phase == Phase::Open && c.unsent_cmds >= early_after(c.last_turn_cmds);
        let id = c.id;
        drop(c);
        if flush {
            engine.mark_dirty(id);
        }
        if early {
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
            c.pending
                .iter()
                .find(|p| p.tx.is_some() || p.handshake)
                .map(|p| p.deadline)
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
    pub(crate) fn check_deadlines(conn: &Rc<RefCell<Conn>>, engine: &Engine, now: Instant) {
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
            let during = match c.phase {
                Phase::Open if c.tls.as_ref().is_some_and(|t| t.is_handshaking()) => {
                    " (no TLS handshake)"
                }
                Phase::Open => " (no reply to AUTH/SELECT)",
                _ => "",
            };
            drop(c);
            return Conn::fail(
                conn,
                engine,
                io::ErrorKind::NotConnected,
                &format!("timed out after {ms} ms{during}"),
            );
        }
        let mut expired = Vec::new();
        for p in c.pending.iter_mut() {
            if p.deadline > now {
                break;
            }
            if let Some(tx) = p.tx.take() {
                expired.push(tx);
            }
        }
        if !expired.is_empty() && !c.retired {
            c.retired = true;
            let (id, endpoint) = (c.id, c.endpoint_id);
            drop(c);
            Conn::retire_in(engine, id, endpoint);
            c = conn.borrow_mut();
        }
        let ms = c.endpoint.command_timeout.as_millis();
        let idle = c.pending.iter().all(|p| p.tx.is_none());
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
            let linger = (c.endpoint.command_timeout * 5).max(RETIRED_LINGER);
            let grace = c.pending.back().map_or(now, |p| p.deadline) + linger;
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

    /// Writes buffered output; what the socket does not take now waits for
    /// writability.
    /// The end-of-turn flush: also closes the turn's command count.
    pub(crate) fn flush_turn(conn: &Rc<RefCell<Conn>>, engine: &Engine) {
        {
            let mut c = conn.borrow_mut();
            c.flush_queued = false;
            c.last_turn_cmds = std::mem::take(&mut c.turn_cmds);
        }
        Conn::flush(conn, engine);
    }

    pub(crate) fn flush(conn: &Rc<RefCell<Conn>>, engine: &Engine) {
        let mut c = conn.borrow_mut();
        c.unsent_cmds = 0;
        if c.phase != Phase::Open {
            return;
        }
        let outcome = if c.tls.is_some() {
            c.write_tls()
        } else {
            c.write_plain()
        };
        let done = match outcome {
            Ok(done) => done,
            Err((kind, why)) => {
                drop(c);
                return Conn::fail(conn, engine, kind, &why);
            }
        };
        let events = if done {
            uv::READABLE
        } else {
            uv::READABLE | uv::WRITABLE
        };
        drop(c);
        Conn::set_events(conn, engine, events);
    }

    /// Writes buffered commands to the socket; `Ok(true)` when all went.
    fn write_plain(&mut self) -> Result<bool, (io::ErrorKind, String)> {
        while self.written < self.out.len() {
            let Some(sock) = self.sock.as_ref() else {
                break;
            };
            match sock.send(&self.out[self.written..]) {
                Ok(0) => return Err((io::ErrorKind::WriteZero, "socket closed".to_owned())),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err((e.kind(), e.to_string())),
            }
        }
        let done = self.written == self.out.len();
        compact(&mut self.out, &mut self.written);
        Ok(done)
    }

    /// Hands buffered commands to the TLS session and writes the records it
    /// has to send; `Ok(true)` when the socket has nothing more to take now
    /// (commands may still wait for the handshake: the read side resumes
    /// them once it is done, see `read`).
    ///
    /// Plaintext goes in only after the handshake: before it, rustls holds
    /// at most its buffer limit of plaintext and then takes nothing
    /// (`Ok(0)`) while wanting to write nothing either, so a loop that waits
    /// for it to take more spins forever (issue 18's TLS freeze). Every
    /// pass must move bytes; one that moves none ends the loop.
    fn write_tls(&mut self) -> Result<bool, (io::ErrorKind, String)> {
        let Conn {
            sock,
            tls,
            out,
            written,
            ..
        } = self;
        let (Some(sock), Some(tls)) = (sock.as_ref(), tls.as_mut()) else {
            return Ok(true);
        };
        loop {
            let mut moved = false;
            if !tls.is_handshaking() {
                while *written < out.len() {
                    match io::Write::write(&mut tls.writer(), &out[*written..]) {
                        Ok(0) => break, // its buffer is full: send first
                        Ok(n) => {
                            *written += n;
                            moved = true;
                        }
                        Err(e) => return Err((e.kind(), e.to_string())),
                    }
                }
            }
            let mut blocked = false;
            while tls.wants_write() {
                match tls.write_tls(&mut &*sock) {
                    Ok(0) => return Err((io::ErrorKind::WriteZero, "socket closed".to_owned())),
                    Ok(_) => moved = true,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        blocked = true;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err((e.kind(), e.to_string())),
                }
            }
            if blocked || !moved || *written == out.len() {
                break;
            }
        }
        compact(out, written);
        Ok(!tls.wants_write())
    }

    /// A readiness event from the poll handle.
    pub(crate) fn on_ready(conn: &Rc<RefCell<Conn>>, engine: &Engine, status: i32, events: i32) {
        let phase = conn.borrow().phase;
        if status < 0 && phase != Phase::Connecting {
            return Conn::fail(
                conn,
                engine,
                io::ErrorKind::Other,
                &format!("poll error {status}"),
            );
        }
        if phase == Phase::Connecting {
            // libuv reports a failed connect as an error status (POLLERR);
            // the socket says why.
            if status >= 0 && events & uv::WRITABLE == 0 {
                return;
            }
            let outcome = conn.borrow().sock.as_ref().map(Socket::take_error);
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

    /// Reads what the socket has into `input`; the error that ended it.
    fn read_plain(&mut self) -> Option<(io::ErrorKind, String)> {
        let mut total = 0;
        while total < READ_BUDGET {
            let Conn { sock, input, .. } = self;
            let sock = sock.as_ref()?;
            input.reserve(READ_CHUNK);
            let len = input.len();
            match sock.recv(input.spare_capacity_mut()) {
                Ok(0) => {
                    return Some((io::ErrorKind::UnexpectedEof, "closed by the server".into()))
                }
                Ok(n) => {
                    let asked = input.capacity() - len;
                    // SAFETY: recv initialised the first `n` bytes of the
                    // spare capacity it was given.
                    unsafe { input.set_len(len + n) };
                    total += n;
                    if n < asked {
                        // The socket is drained (a short read); the poll is
                        // level-triggered and reports anything newer.
                        return None;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some((e.kind(), e.to_string())),
            }
        }
        None
    }

    /// Reads TLS records from the socket, decrypts them into `input`.
    fn read_tls(&mut self) -> Option<(io::ErrorKind, String)> {
        let Conn {
            sock, tls, input, ..
        } = self;
        let (sock, tls) = (sock.as_ref()?, tls.as_mut()?);
        let mut total = 0;
        while total < READ_BUDGET {
            match tls.read_tls(&mut &*sock) {
                Ok(0) => {
                    return Some((io::ErrorKind::UnexpectedEof, "closed by the server".into()))
                }
                Ok(n) => total += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Some((e.kind(), e.to_string())),
            }
            let state = match tls.process_new_packets() {
                Ok(state) => state,
                // e.g. "invalid peer certificate: UnknownIssuer"
                Err(e) => return Some((io::ErrorKind::InvalidData, format!("TLS: {e}"))),
            };
            let n = state.plaintext_bytes_to_read();
            if n > 0 {
                let len = input.len();
                input.resize(len + n, 0);
                if let Err(e) = io::Read::read_exact(&mut tls.reader(), &mut input[len..]) {
                    return Some((e.kind(), e.to_string()));
                }
            }
            if state.peer_has_closed() {
                return Some((io::ErrorKind::UnexpectedEof, "closed by the server".into()));
            }
        }
        None
    }

    fn read(conn: &Rc<RefCell<Conn>>, engine: &Engine) {
        let mut c = conn.borrow_mut();
        let failure = if c.tls.is_some() {
            c.read_tls()
        } else {
            c.read_plain()
        };
        // Replies that arrived before a close are still delivered.
        let mut replies = Vec::new();
        let mut at = 0;
        let mut bad = None;
        loop {
            match resp::frame(&c.input[at..]) {
                Ok(Some(n)) => {
                    let reply = &c.input[at..at + n];
                    let parsed = match resp::simple_value(reply) {
                        Some(v) => Ok(v),
                        None => redis::parse_redis_value(reply),
                    };
                    match parsed {
                        Ok(v) => replies.push(v),
                        Err(e) => {
                            bad = Some(e.to_string());
                            break;
                        }
                    }
                    at += n;
                }
                Ok(None) => break,
                Err(e) => {
                    bad = Some(e.0);
                    break;
                }
            }
        }
        c.input.drain(..at);
        if c.input.is_empty() && c.input.capacity() > SHRINK_ABOVE {
            c.input.shrink_to(READ_CHUNK);
        }
        let mut handshake_error = None;
        let mut delivered = Vec::with_capacity(replies.len());
        for value in replies {
            let Some(p) = c.pending.pop_front() else {
                bad = Some("a reply nobody asked for".into());
                break;
            };
            if p.handshake {
                c.handshake_left = c.handshake_left.saturating_sub(1);
                if let Value::ServerError(e) = &value {
                    let detail = e.details().unwrap_or("");
                    handshake_error = Some(format!("AUTH/SELECT refused: {} {detail}", e.code()));
                }
            } else if let Some(tx) = p.tx {
                delivered.push((tx, value));
            }
        }
        if handshake_error.is_none() {
            c.wake_ready();
        }
        // TLS may have something to send now (its handshake), or be done with
        // it, so that the commands held back for it can go.
        let tls_pending = c
            .tls
            .as_ref()
            .is_some_and(|t| t.wants_write() || (!t.is_handshaking() && c.written < c.out.len()));
        let retired_idle = c.retired && c.pending.iter().all(|p| p.tx.is_none());
        let (id, endpoint) = (c.id, c.endpoint_id);
        drop(c);
        for (tx, value) in delivered {
            let _ = tx.send(Ok(value));
        }
        if let Some(why) = handshake_error {
            return Conn::fail(conn, engine, io::ErrorKind::PermissionDenied, &why);
        }
        if let Some(why) = bad {
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
fn conn_of(engine: &Engine, id: u64) -> Option<Rc<RefCell<Conn>>> {
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

/// Drops what was written from the front of `out`: all of it once drained,
/// else once the written part is the larger half (so a socket that keeps
/// up only partly does not grow the buffer without end). A buffer a spike
/// grew is given back once drained.
fn compact(out: &mut Vec<u8>, written: &mut usize) {
    if *written == out.len() {
        out.clear();
        *written = 0;
        if out.capacity() > SHRINK_ABOVE {
            out.shrink_to(READ_CHUNK);
        }
    } else if *written > out.len() / 2 {
        out.drain(..*written);
        *written = 0;
    }
}

/// Buffers larger than this are shrunk back once empty.
const SHRINK_ABOVE: usize = 4 << 20;

/// `EINPROGRESS`: a non-blocking connect under way.
#[cfg(any(target_os = "linux", target_os = "android"))]
const EINPROGRESS: i32 = 115;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const EINPROGRESS: i32 = 36;

unsafe extern "C" fn close_poll_handle(h: *mut Handle) {
    if let Some(uv) = uv::uv() {
        // SAFETY: `h` was allocated for a poll handle and is now closed.
        unsafe { uv.free(h, uv::POLL) };
    }
}

/// One operation's view of the engine's connection to an endpoint: the
/// `ConnectionLike` the lock logic runs on. It stays on the connection its
/// first command went to while that one lives (so a clean-up follows its
/// `SET`), and moves to the endpoint's current connection after a break.
pub(crate) struct LoopConn {
    endpoint_id: u32,
    endpoint: Arc<Endpoint>,
    conn: Option<u64>,
}

impl LoopConn {
    /// Binds to the endpoint's current connection (opening one if there is
    /// none) and waits until it is usable. A failure here is the connect's
    /// (`Error::Connection`), reported once: the lock logic's retry after a
    /// broken connection is for commands, not for a server that is down.
    pub(crate) async fn connect(endpoint_id: u32) -> crate::error::Result<LoopConn> {
        let unavailable = || {
            crate::error::Error::Connection("the JavaScript environment is shutting down".into())
        };
        let (endpoint, id, wait) = {
            let engine = reactor::current().ok_or_else(unavailable)?;
            let endpoint = engine.endpoint(endpoint_id)?;
            let existing = engine.current.borrow().get(&endpoint_id).copied();
            let found = existing.and_then(|id| conn_of(&engine, id));
            let conn = found.unwrap_or_else(|| Conn::open(&engine, endpoint_id, &endpoint));
            let mut c = conn.borrow_mut();
            if c.phase == Phase::Closed {
                // Failed at once (e.g. no such socket).
                let why = c.error.clone().unwrap_or_else(|| "closed".into());
                return Err(crate::error::Error::Connection(why));
            }
            let wait = (!c.is_ready()).then(|| {
                let (tx, rx) = oneshot::channel();
                c.ready_waiters.push(tx);
                rx
            });
            (endpoint, c.id, wait)
        };
        if let Some(rx) = wait {
            match rx.await {
                Ok(Ok(())) => {}
                Ok(Err(why)) => return Err(crate::error::Error::Connection(why)),
                Err(_) => return Err(unavailable()),
            }
        }
        Ok(LoopConn {
            endpoint_id,
            endpoint,
            conn: Some(id),
        })
    }

    fn submit(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>),
        replies: usize,
        rx: impl FnMut(oneshot::Receiver<RedisResult<Value>>),
    ) -> RedisResult<()> {
        let engine = reactor::current().ok_or_else(|| {
            io_err(
                io::ErrorKind::NotConnected,
                "the JavaScript environment is shutting down".into(),
            )
        })?;
        let live = self.conn.and_then(|id| conn_of(&engine, id));
        let conn = match live {
            Some(conn) => conn,
            None => {
                let existing = engine.current.borrow().get(&self.endpoint_id).copied();
                let found = existing.and_then(|id| conn_of(&engine, id));
                let conn =
                    found.unwrap_or_else(|| Conn::open(&engine, self.endpoint_id, &self.endpoint));
                let c = conn.borrow();
                self.conn = Some(c.id);
                if c.phase == Phase::Closed {
                    let why = c.error.clone().unwrap_or_else(|| "closed".into());
                    return Err(io_err(io::ErrorKind::ConnectionRefused, why));
                }
                drop(c);
                conn
            }
        };
        Conn::push(&conn, &engine, write, replies, rx);
        Ok(())
    }
}

async fn reply(rx: oneshot::Receiver<RedisResult<Value>>) -> RedisResult<Value> {
    rx.await.unwrap_or_else(|_| {
        Err(io_err(
            io::ErrorKind::ConnectionAborted,
            "the connection was closed".into(),
        ))
    })
}

impl ConnectionLike for LoopConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let mut slot = None;
        let submitted = self.submit(|out| cmd.write_packed_command(out), 1, |rx| slot = Some(rx));
        async move {
            submitted?;
            match slot {
                Some(rx) => reply(rx).await,
                None => Err(io_err(io::ErrorKind::Other, "no reply slot".into())),
            }
        }
        .boxed()
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let mut slots = Vec::with_capacity(offset + count);
        let submitted = self.submit(
            |out| out.extend_from_slice(&pipeline.get_packed_pipeline()),
            offset + count,
            |rx| slots.push(rx),
        );
        async move {
            submitted?;
            let mut values = Vec::with_capacity(count);
            for (i, rx) in slots.into_iter().enumerate() {
                let value = reply(rx).await?;
                if i >= offset {
                    values.push(value);
                }
            }
            Ok(values)
        }
        .boxed()
    }

    fn get_db(&self) -> i64 {
        self.endpoint.db
    }
}
