//! The bytes of one connection: a connected non-blocking socket, plain or
//! through a rustls session (tls.rs, driven from readiness events as in
//! rustls's `tlsclient-mio`). It moves bytes between the socket and the
//! connection's buffers and knows nothing of commands or replies.
//!
//! The TLS rules (issue 18): plaintext goes in only after the handshake;
//! every write pass must move bytes; and the read side resumes the commands
//! held back for the handshake once it is done (see [`Transport::flush_after_read`]).

use std::io;

use rustls::ClientConnection;
use socket2::Socket;

use crate::transport::endpoint::{Address, Endpoint};

/// Most bytes read per readiness event, so one busy socket cannot hold the
/// loop; the rest is read on the next turn (the poll stays readable).
const READ_BUDGET: usize = 1 << 20;
/// Bytes a read asks for at a time; also what a shrunk buffer keeps.
pub(super) const READ_CHUNK: usize = 64 * 1024;
/// Buffers larger than this are shrunk back once empty.
pub(super) const SHRINK_ABOVE: usize = 4 << 20;

/// An I/O failure: its kind and what to tell the user.
pub(super) type Failure = (io::ErrorKind, String);

pub(super) enum Transport {
    Plain(Socket),
    /// The TLS session over the socket, for a TLS endpoint.
    Tls(Socket, Box<ClientConnection>),
}

impl Transport {
    /// `sock`, through a TLS session when the endpoint asks for TLS (over
    /// TCP; a Unix socket is always plain).
    pub(super) fn new(sock: Socket, endpoint: &Endpoint) -> Result<Transport, String> {
        match (&endpoint.tls, &endpoint.address) {
            (Some(settings), Address::Tcp { host, .. }) => {
                let session = super::tls::connect(settings, host)?;
                Ok(Transport::Tls(sock, Box::new(session)))
            }
            _ => Ok(Transport::Plain(sock)),
        }
    }

    pub(super) fn socket(&self) -> &Socket {
        match self {
            Transport::Plain(sock) | Transport::Tls(sock, _) => sock,
        }
    }

    /// The TLS handshake is under way (never, in plain).
    pub(super) fn is_handshaking(&self) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls(_, tls) => tls.is_handshaking(),
        }
    }

    /// After a read: TLS has something to send now (its handshake), or is
    /// done with it, so that the commands held back for it (`unwritten`)
    /// can go. Plain never needs this: its commands were never held.
    pub(super) fn flush_after_read(&self, unwritten: bool) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls(_, tls) => tls.wants_write() || (!tls.is_handshaking() && unwritten),
        }
    }

    /// Reads what the socket has into `input` (decrypted, over TLS); the
    /// error that ended it.
    pub(super) fn read(&mut self, input: &mut Vec<u8>) -> Option<Failure> {
        match self {
            Transport::Plain(sock) => read_plain(sock, input),
            Transport::Tls(sock, tls) => read_tls(sock, tls, input),
        }
    }

    /// Writes `out[*written..]`, advancing `written`; `Ok(true)` when the
    /// socket has nothing more to take now. (Over TLS, commands may still
    /// wait for the handshake: the read side resumes them, see
    /// [`Transport::flush_after_read`].)
    pub(super) fn write(&mut self, out: &[u8], written: &mut usize) -> Result<bool, Failure> {
        match self {
            Transport::Plain(sock) => write_plain(sock, out, written),
            Transport::Tls(sock, tls) => write_tls(sock, tls, out, written),
        }
    }
}

fn read_plain(sock: &Socket, input: &mut Vec<u8>) -> Option<Failure> {
    let mut total = 0;
    while total < READ_BUDGET {
        input.reserve(READ_CHUNK);
        let len = input.len();
        match sock.recv(input.spare_capacity_mut()) {
            Ok(0) => return Some((io::ErrorKind::UnexpectedEof, "closed by the server".into())),
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
fn read_tls(sock: &Socket, tls: &mut ClientConnection, input: &mut Vec<u8>) -> Option<Failure> {
    let mut total = 0;
    while total < READ_BUDGET {
        match tls.read_tls(&mut &*sock) {
            Ok(0) => return Some((io::ErrorKind::UnexpectedEof, "closed by the server".into())),
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

/// Writes buffered commands to the socket; `Ok(true)` when all went.
fn write_plain(sock: &Socket, out: &[u8], written: &mut usize) -> Result<bool, Failure> {
    while *written < out.len() {
        match sock.send(&out[*written..]) {
            Ok(0) => return Err((io::ErrorKind::WriteZero, "socket closed".to_owned())),
            Ok(n) => *written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((e.kind(), e.to_string())),
        }
    }
    Ok(*written == out.len())
}

/// Hands buffered commands to the TLS session and writes the records it
/// has to send; `Ok(true)` when the socket has nothing more to take now
/// (commands may still wait for the handshake: the read side resumes
/// them once it is done).
///
/// Plaintext goes in only after the handshake: before it, rustls holds
/// at most its buffer limit of plaintext and then takes nothing
/// (`Ok(0)`) while wanting to write nothing either, so a loop that waits
/// for it to take more spins forever (issue 18's TLS freeze). Every
/// pass must move bytes; one that moves none ends the loop.
fn write_tls(
    sock: &Socket,
    tls: &mut ClientConnection,
    out: &[u8],
    written: &mut usize,
) -> Result<bool, Failure> {
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
    Ok(!tls.wants_write())
}
