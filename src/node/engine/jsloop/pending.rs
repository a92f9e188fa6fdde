//! The reply queue of one connection: a slot per command sent, in order,
//! each with its deadline; which deadlines passed; and how long a retired
//! connection lingers for late replies.

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use redis::{RedisError, RedisResult, Value};
use tokio::sync::oneshot;

pub(super) type Reply = oneshot::Sender<RedisResult<Value>>;

/// Least time a retired connection stays open for late replies.
const RETIRED_LINGER: Duration = Duration::from_secs(2);

pub(super) fn io_err(kind: io::ErrorKind, msg: String) -> RedisError {
    RedisError::from(io::Error::new(kind, msg))
}

pub(super) struct Pending {
    /// `None` once the caller gave up (timed out); the reply is discarded.
    pub(super) tx: Option<Reply>,
    deadline: Instant,
    /// `AUTH`/`SELECT`: an error reply breaks the connection.
    pub(super) handshake: bool,
}

/// The replies a connection still expects, oldest first.
#[derive(Default)]
pub(super) struct Queue {
    items: VecDeque<Pending>,
    /// AUTH/SELECT replies still to come (their entries lead the queue).
    handshake_left: usize,
}

impl Queue {
    /// An AUTH/SELECT reply to expect, bounded by the connect deadline.
    pub(super) fn push_handshake(&mut self, deadline: Instant) {
        self.handshake_left += 1;
        self.items.push_back(Pending {
            tx: None,
            deadline,
            handshake: true,
        });
    }

    /// A command's reply to expect by `deadline`: where it will arrive.
    pub(super) fn push(&mut self, deadline: Instant) -> oneshot::Receiver<RedisResult<Value>> {
        let (tx, rx) = oneshot::channel();
        self.items.push_back(Pending {
            tx: Some(tx),
            deadline,
            handshake: false,
        });
        rx
    }

    /// The slot the next reply belongs to.
    pub(super) fn pop(&mut self) -> Option<Pending> {
        let p = self.items.pop_front()?;
        if p.handshake {
            self.handshake_left = self.handshake_left.saturating_sub(1);
        }
        Some(p)
    }

    /// Every AUTH/SELECT reply is in.
    pub(super) fn handshake_done(&self) -> bool {
        self.handshake_left == 0
    }

    /// No caller waits on any reply still to come.
    pub(super) fn idle(&self) -> bool {
        self.items.iter().all(|p| p.tx.is_none())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The earliest deadline someone waits on (a handshake reply counts).
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.items
            .iter()
            .find(|p| p.tx.is_some() || p.handshake)
            .map(|p| p.deadline)
    }

    /// The callers whose deadline passed by `now`, taken out of their
    /// slots (which stay, for the replies still to come).
    pub(super) fn expire(&mut self, now: Instant) -> Vec<Reply> {
        let mut expired = Vec::new();
        for p in self.items.iter_mut() {
            if p.deadline > now {
                break;
            }
            if let Some(tx) = p.tx.take() {
                expired.push(tx);
            }
        }
        expired
    }

    /// Until when a retired, idle connection stays open: a clean-up may
    /// still be in flight behind what timed out (a slow link delivers both
    /// late), so it keeps the socket a while past the last deadline.
    pub(super) fn linger_until(&self, now: Instant, command_timeout: Duration) -> Instant {
        let linger = (command_timeout * 5).max(RETIRED_LINGER);
        self.items.back().map_or(now, |p| p.deadline) + linger
    }

    /// Empties the queue: the callers still waiting.
    pub(super) fn take_waiting(&mut self) -> Vec<Reply> {
        self.items.drain(..).filter_map(|p| p.tx).collect()
    }
}
