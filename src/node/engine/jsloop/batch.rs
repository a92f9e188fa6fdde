//! Write batching for one connection: the output buffer and the turn's
//! command counts that decide when it is written (at the turn's end, or
//! early once enough commands wait).

use super::transport::{READ_CHUNK, SHRINK_ABOVE};

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

/// A lone caller's command goes out at once: the first command of a turn
/// that follows a turn of at most one command. Nothing is gained by
/// waiting for the turn's end then (there is rarely a second command to
/// join it), and the wait is on the caller's round trip: with Bluebird
/// (the redlock 4 face) the next command is issued from `setImmediate`,
/// and the turn's end is the next loop iteration's prepare phase. A busy
/// connection keeps the rule above; a turn that does bring more commands
/// counts them, so the next turn is back on it. Measured at 1 worker,
/// 8 interleaved rounds (benchmark/NOTES.md §29): redlock face median
/// 6,594 -> 6,889 cycles/s; 16 workers unchanged.
fn lone(last_turn: usize, turn: usize) -> bool {
    last_turn <= 1 && turn == 1
}

/// Commands packed for the socket, and how many went out.
pub(super) struct Batch {
    out: Vec<u8>,
    written: usize,
    /// Queued for the engine's next flush.
    flush_queued: bool,
    /// Commands queued this turn, in the previous turn, and not yet written.
    turn_cmds: usize,
    last_turn_cmds: usize,
    unsent_cmds: usize,
}

/// What queuing a command asks of the connection.
pub(super) struct Queued {
    /// Put it on the engine's end-of-turn flush (once per turn).
    pub(super) flush_at_turn_end: bool,
    /// Write now: enough commands wait that Redis can start on them while
    /// this thread issues the rest.
    pub(super) write_now: bool,
}

impl Batch {
    pub(super) fn new() -> Batch {
        Batch {
            out: Vec::with_capacity(READ_CHUNK),
            written: 0,
            flush_queued: false,
            turn_cmds: 0,
            last_turn_cmds: 0,
            unsent_cmds: 0,
        }
    }

    /// The buffer to pack commands into (behind what is not yet written).
    pub(super) fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// One command was packed into [`Batch::out`]; `open` when the
    /// connection can write.
    pub(super) fn queued(&mut self, open: bool) -> Queued {
        // One flush per connection per turn, however many commands.
        let flush_at_turn_end = open && !std::mem::replace(&mut self.flush_queued, true);
        self.turn_cmds += 1;
        self.unsent_cmds += 1;
        // Early write: a lone caller's command, or a quarter of the last
        // turn's commands are waiting, so Redis can start on them while
        // this thread issues the rest.
        let write_now = open
            && (lone(self.last_turn_cmds, self.turn_cmds)
                || self.unsent_cmds >= early_after(self.last_turn_cmds));
        Queued {
            flush_at_turn_end,
            write_now,
        }
    }

    /// The end-of-turn flush closes the turn's command count.
    pub(super) fn end_turn(&mut self) {
        self.flush_queued = false;
        self.last_turn_cmds = std::mem::take(&mut self.turn_cmds);
    }

    /// A write is about to be tried: every command queued so far is its.
    pub(super) fn writing(&mut self) {
        self.unsent_cmds = 0;
    }

    /// The buffer and how much of it was written, for a transport to
    /// write the rest of.
    pub(super) fn parts(&mut self) -> (&[u8], &mut usize) {
        (&self.out, &mut self.written)
    }

    /// Bytes packed and not yet written.
    pub(super) fn has_unwritten(&self) -> bool {
        self.written < self.out.len()
    }

    pub(super) fn capacity(&self) -> usize {
        self.out.capacity()
    }

    /// Drops what was written from the front of the buffer: all of it once
    /// drained, else once the written part is the larger half (so a socket
    /// that keeps up only partly does not grow the buffer without end). A
    /// buffer a spike grew is given back once drained.
    pub(super) fn compact(&mut self) {
        let (out, written) = (&mut self.out, &mut self.written);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Queues `n` commands on an open connection: how many asked to be written at once.
    fn queue(b: &mut Batch, n: usize) -> usize {
        (0..n).filter(|_| b.queued(true).write_now).count()
    }

    #[test]
    fn one_flush_per_turn_and_a_lone_caller_goes_out_at_once() {
        let mut b = Batch::new();
        let q = b.queued(true);
        assert!(
            q.flush_at_turn_end && q.write_now,
            "a lone caller's command"
        );
        b.writing();
        assert!(!b.queued(true).flush_at_turn_end, "one flush per turn");
        b.end_turn();
        assert!(b.queued(true).flush_at_turn_end, "a new turn flushes again");
        assert!(
            !b.queued(false).write_now,
            "nothing is written on a closed connection"
        );
    }

    #[test]
    fn a_busy_connection_writes_in_quarters_of_the_last_turn() {
        let mut b = Batch::new();
        queue(&mut b, 40);
        b.writing();
        b.end_turn();
        // 40 last turn: early writes every 10 commands.
        let mut early = 0;
        for _ in 0..40 {
            if b.queued(true).write_now {
                early += 1;
                b.writing();
            }
        }
        assert_eq!(early, 4);
        assert_eq!(early_after(0), EARLY_MIN);
        assert_eq!(early_after(400), 100);
    }

    #[test]
    fn compaction_drops_what_was_written() {
        let mut b = Batch::new();
        b.out().extend_from_slice(&[1; 100]);
        *b.parts().1 = 30;
        b.compact();
        assert!(b.has_unwritten(), "less than half written: kept as is");
        assert_eq!(b.parts().0.len(), 100);
        *b.parts().1 = 60;
        b.compact();
        assert_eq!(
            (b.parts().0.len(), *b.parts().1),
            (40, 0),
            "the written front dropped"
        );
        *b.parts().1 = 40;
        b.compact();
        assert!(!b.has_unwritten() && b.parts().0.is_empty());
        b.out().resize(SHRINK_ABOVE + 1, 0);
        *b.parts().1 = SHRINK_ABOVE + 1;
        b.compact();
        assert!(
            b.capacity() < SHRINK_ABOVE,
            "a spike's buffer is given back"
        );
    }
}
