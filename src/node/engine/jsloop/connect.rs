//! Reaching a server's socket: where an endpoint's address leads (a Unix
//! socket, an IP address, or a host name to resolve), a non-blocking
//! connect, the host name lookup on a short-lived thread, and what a
//! connect timeout says. The connection (conn.rs) drives these steps.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use socket2::{Domain, SockAddr, Socket, Type};
use tokio::sync::oneshot;

use crate::transport::endpoint::Address;

/// `EINPROGRESS`: a non-blocking connect under way.
#[cfg(any(target_os = "linux", target_os = "android"))]
const EINPROGRESS: i32 = 115;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const EINPROGRESS: i32 = 36;

/// The first step towards an address.
pub(super) enum Route {
    /// Connect at once.
    Unix(SockAddr),
    /// Connect at once (the one address to try).
    Ip(SocketAddr),
    /// Resolve the host name first.
    Lookup(String, u16),
    /// Not an address (e.g. a Unix socket path too long).
    Invalid(String),
}

pub(super) fn route(address: &Address) -> Route {
    match address {
        Address::Unix(path) => match SockAddr::unix(path) {
            Ok(addr) => Route::Unix(addr),
            Err(e) => Route::Invalid(e.to_string()),
        },
        Address::Tcp { host, port } => match host.parse::<IpAddr>() {
            Ok(ip) => Route::Ip(SocketAddr::new(ip, *port)),
            Err(_) => Route::Lookup(host.clone(), *port),
        },
    }
}

/// A non-blocking socket connecting to `addr` (the connect is under way
/// or done; the poll reports which, once writable).
pub(super) fn start(addr: &SockAddr) -> io::Result<Socket> {
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
    match sock.connect(addr) {
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
}

/// A lookup's answer: the addresses, or why there are none.
pub(super) type Answer = Result<Vec<SocketAddr>, (io::ErrorKind, String)>;

/// Resolves `host` on a short-lived thread (getaddrinfo blocks); the
/// answer, awaited on this thread. `Err` when no thread could start.
pub(super) fn lookup(host: String, port: u16) -> io::Result<impl Future<Output = Answer>> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("redislock-rs-dns".into())
        .spawn(move || {
            let answer = (host.as_str(), port)
                .to_socket_addrs()
                .map(Vec::from_iter)
                .map_err(|e| (e.kind(), e.to_string()));
            let _ = tx.send(answer);
        })?;
    Ok(async move {
        rx.await
            .unwrap_or_else(|_| Err((io::ErrorKind::Other, "resolver gone".into())))
    })
}

/// Why connecting timed out: connecting (socket, TLS handshake,
/// AUTH/SELECT) is bounded by the connect timeout, and a TCP connection
/// that is up is not yet usable.
pub(super) fn timed_out(ms: u128, open: bool, tls_handshaking: bool) -> String {
    let during = if !open {
        ""
    } else if tls_handshaking {
        " (no TLS handshake)"
    } else {
        " (no reply to AUTH/SELECT)"
    };
    format!("timed out after {ms} ms{during}")
}
