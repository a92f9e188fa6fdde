//! The JS-thread engine's timer wheel: entries by (deadline, sequence
//! number), so an abandoned pause (woken early, cancelled) takes its own
//! entry off and leaves nothing behind; which deadline the one libuv timer
//! is armed for; the entries due by a time, earliest first. No libuv here:
//! the engine (reactor.rs) arms its timer where this says.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::Instant;

/// An entry's key: its deadline and its sequence number.
pub(crate) type Key = (Instant, u64);

pub(crate) struct Wheel<T> {
    entries: RefCell<BTreeMap<Key, T>>,
    armed: Cell<Option<Instant>>,
    seq: Cell<u64>,
}

impl<T> Wheel<T> {
    pub(crate) fn new() -> Wheel<T> {
        Wheel {
            entries: RefCell::new(BTreeMap::new()),
            armed: Cell::new(None),
            seq: Cell::new(0),
        }
    }

    /// Schedules `entry` at `at`: its key, and the deadline the timer must
    /// be armed for now (`None`: it is armed early enough already).
    pub(crate) fn schedule(&self, at: Instant, entry: T) -> (Key, Option<Instant>) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        self.entries.borrow_mut().insert((at, seq), entry);
        let arm = self.armed.get().is_none_or(|armed| at < armed);
        if arm {
            self.armed.set(Some(at));
        }
        ((at, seq), arm.then_some(at))
    }

    /// Takes an entry off (the timer stays armed and, if it was the
    /// earliest, fires once with nothing to do). Does nothing while the
    /// wheel is being read (an entry fired and dropped during the firing).
    pub(crate) fn remove(&self, key: Key) {
        if let Ok(mut entries) = self.entries.try_borrow_mut() {
            entries.remove(&key);
        }
    }

    /// The timer fired: it is armed no more until [`Wheel::rearm`].
    pub(crate) fn fired(&self) {
        self.armed.set(None);
    }

    /// The earliest entry due by `now`, taken off.
    pub(crate) fn pop_due(&self, now: Instant) -> Option<T> {
        let mut entries = self.entries.borrow_mut();
        match entries.first_key_value() {
            Some((&(at, _), _)) if at <= now => entries.pop_first().map(|(_, e)| e),
            _ => None,
        }
    }

    /// After a firing: the deadline to arm the timer for, if any is left.
    pub(crate) fn rearm(&self) -> Option<Instant> {
        let next = self
            .entries
            .borrow()
            .first_key_value()
            .map(|(&(at, _), _)| at);
        if next.is_some() {
            self.armed.set(next);
        }
        next
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.borrow().len()
    }

    pub(crate) fn clear(&self) {
        self.entries.borrow_mut().clear();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_timer_is_armed_only_for_an_earlier_deadline() {
        let t0 = Instant::now();
        let w = Wheel::new();
        assert_eq!(w.schedule(t0 + ms(50), 'a').1, Some(t0 + ms(50)));
        assert_eq!(
            w.schedule(t0 + ms(80), 'b').1,
            None,
            "armed earlier already"
        );
        assert_eq!(w.schedule(t0 + ms(20), 'c').1, Some(t0 + ms(20)));
        assert_eq!(w.len(), 3);
    }

    #[test]
    fn entries_fire_earliest_first_and_in_order_of_scheduling_at_one_deadline() {
        let t0 = Instant::now();
        let w = Wheel::new();
        w.schedule(t0 + ms(30), 'c');
        w.schedule(t0 + ms(10), 'a');
        w.schedule(t0 + ms(10), 'b');
        w.schedule(t0 + ms(90), 'd');
        w.fired();
        let due: Vec<char> = std::iter::from_fn(|| w.pop_due(t0 + ms(30))).collect();
        assert_eq!(due, ['a', 'b', 'c']);
        assert_eq!(w.rearm(), Some(t0 + ms(90)));
        assert_eq!(w.schedule(t0 + ms(95), 'e').1, None, "re-armed for 90 ms");
    }

    #[test]
    fn a_removed_entry_never_fires() {
        let t0 = Instant::now();
        let w = Wheel::new();
        let (gone, _) = w.schedule(t0 + ms(10), 'a');
        w.schedule(t0 + ms(20), 'b');
        w.remove(gone);
        w.fired();
        assert_eq!(w.pop_due(t0 + ms(100)), Some('b'));
        assert_eq!(w.pop_due(t0 + ms(100)), None);
        assert_eq!(w.rearm(), None);
        assert_eq!(
            w.schedule(t0 + ms(500), 'c').1,
            Some(t0 + ms(500)),
            "disarmed: arms again"
        );
        w.clear();
        assert_eq!(w.len(), 0);
    }
}
