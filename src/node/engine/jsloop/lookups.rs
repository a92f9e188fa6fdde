//! Host name lookups in flight, shared by the connections that wait for
//! the same host and port (the reactor counts them for its stats).

use std::cell::RefCell;
use std::time::Instant;

/// Host name lookups in flight, by host and port, with the connections
/// waiting for each. A lookup older than `LOOKUP_FRESH` is not joined (its
/// resolver may be stuck): a new one starts, so a hung resolver costs at
/// most one thread per host every `LOOKUP_FRESH`.
#[derive(Default)]
pub(crate) struct Lookups(RefCell<std::collections::HashMap<HostPort, Lookup>>);

type HostPort = (String, u16);
/// When a lookup started, and the connections waiting for it.
type Lookup = (Instant, Vec<u64>);

const LOOKUP_FRESH: std::time::Duration = std::time::Duration::from_secs(30);

impl Lookups {
    /// Adds connection `id` to the lookup of `key` in flight; `false` when
    /// there is none (fresh enough) and the caller must start one, which
    /// this records.
    pub(crate) fn join(&self, key: &HostPort, id: u64) -> bool {
        let mut map = self.0.borrow_mut();
        let now = Instant::now();
        match map.get_mut(key) {
            Some((started, waiters)) if now.duration_since(*started) < LOOKUP_FRESH => {
                waiters.push(id);
                true
            }
            _ => {
                map.insert(key.clone(), (now, vec![id]));
                false
            }
        }
    }

    /// The connections that waited for the lookup of `key`, now answered.
    pub(crate) fn finish(&self, key: &HostPort) -> Vec<u64> {
        self.0
            .borrow_mut()
            .remove(key)
            .map(|(_, waiters)| waiters)
            .unwrap_or_default()
    }

    /// Lookups in flight.
    pub(crate) fn len(&self) -> usize {
        self.0.borrow().len()
    }
}
