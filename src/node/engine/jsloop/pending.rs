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

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn replies_go_to_their_slots_in_order_and_handshakes_lead() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.push_handshake(t0 + ms(100));
        let mut first = q.push(t0 + ms(10));
        let mut second = q.push(t0 + ms(20));
        assert!(!q.handshake_done() && !q.idle());
        let hs = q.pop().expect("the handshake's reply");
        assert!(hs.handshake && hs.tx.is_none() && q.handshake_done());
        let tx = q
            .pop()
            .and_then(|p| p.tx)
            .expect("the first command's slot");
        let _ = tx.send(Ok(Value::Int(1)));
        assert!(matches!(first.try_recv(), Ok(Ok(Value::Int(1)))));
        assert!(
            second.try_recv().is_err(),
            "the second slot is still waiting"
        );
        assert!(!q.is_empty());
    }

    #[test]
    fn deadlines_expire_oldest_first_and_the_slots_stay_for_late_replies() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        let _a = q.push(t0 + ms(10));
        let _b = q.push(t0 + ms(20));
        let _c = q.push(t0 + ms(30));
        assert_eq!(q.next_deadline(), Some(t0 + ms(10)));
        assert_eq!(q.expire(t0 + ms(20)).len(), 2);
        assert_eq!(q.next_deadline(), Some(t0 + ms(30)), "the next waiting one");
        assert!(!q.idle());
        assert_eq!(q.expire(t0 + ms(30)).len(), 1);
        assert!(
            q.idle() && !q.is_empty(),
            "three replies still to come, nobody waits"
        );
        assert_eq!(q.next_deadline(), None);
        assert!(q.take_waiting().is_empty() && q.is_empty());
    }

    #[test]
    fn a_retired_connection_lingers_past_its_last_deadline() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        assert_eq!(q.linger_until(t0, ms(100)), t0 + RETIRED_LINGER);
        let _a = q.push(t0 + ms(50));
        assert_eq!(q.linger_until(t0, ms(100)), t0 + ms(50) + RETIRED_LINGER);
        assert_eq!(q.linger_until(t0, ms(1000)), t0 + ms(50) + ms(5000));
        assert_eq!(q.take_waiting().len(), 1);
    }
}
