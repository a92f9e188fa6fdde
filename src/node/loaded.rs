//! Which connections are known to have a lock script loaded: a redlock
//! attempt leaves a server unheard once a majority has granted it only
//! where its `EVALSHA` cannot be answered NOSCRIPT (locks/quorum.rs
//! `Settle::Majority`: nobody would be left to send the `EVAL`, so the
//! script would never load there nor the lock be taken). Known means the
//! script ran on that very connection (a new one may reach a restarted
//! server, which has none) and no NOSCRIPT has been seen anywhere since
//! (transport/lua.rs counts them), so after a `SCRIPT FLUSH` the next
//! release or extend that meets one drops every record.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use crate::transport::lua::noscripts_seen;

/// Per engine and endpoint: each script hash, the connection it ran on
/// and the NOSCRIPT count then.
type Records = HashMap<(TypeId, u32), Vec<(String, u64, u64)>>;

static KNOWN: LazyLock<Mutex<Records>> = LazyLock::new(Mutex::default);

/// Whether `hash` is known loaded on connection `conn` of `endpoint`.
pub(crate) fn knows(engine: TypeId, endpoint: u32, hash: &str, conn: u64) -> bool {
    let now = noscripts_seen();
    let known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    known.get(&(engine, endpoint)).is_some_and(|list| {
        list.iter()
            .any(|(h, c, seen)| *c == conn && *seen == now && h == hash)
    })
}

/// What one redlock acquire learns about where its lock script is loaded:
/// with a majority grant, each server's connection that is not known to
/// have the script yet (it must be answered: [`Learning::is_final`]), to be
/// recorded once the script ran there ([`Learning::record`]).
pub(crate) struct Learning<'a> {
    engine: TypeId,
    endpoints: &'a [u32],
    hash: &'a str,
    seen: u64,
    /// Per server, the connection to record the script on once it ran
    /// there (u64::MAX: nothing to record, it is known already or was not
    /// asked).
    pending: Vec<AtomicU64>,
}

impl<'a> Learning<'a> {
    /// For an acquire of script `hash` on `endpoints` of engine `engine`.
    pub(crate) fn new(engine: TypeId, endpoints: &'a [u32], hash: &'a str) -> Learning<'a> {
        Learning {
            engine,
            endpoints,
            hash,
            seen: noscripts_seen(),
            pending: endpoints.iter().map(|_| AtomicU64::new(u64::MAX)).collect(),
        }
    }

    /// Whether server `i`'s command on connection `conn` is final once
    /// sent (the script is known loaded there); if not, it is remembered.
    pub(crate) fn is_final(&self, i: usize, conn: u64) -> bool {
        let known = knows(self.engine, self.endpoints[i], self.hash, conn);
        if !known {
            self.pending[i].store(conn, Ordering::Relaxed);
        }
        known
    }

    /// The script ran (it answered) on the servers `ran` says.
    pub(crate) fn record(&self, ran: impl Fn(usize) -> bool) {
        for (i, conn) in self.pending.iter().enumerate() {
            let conn = conn.load(Ordering::Relaxed);
            if conn != u64::MAX && ran(i) {
                learned(self.engine, self.endpoints[i], self.hash, conn, self.seen);
            }
        }
    }
}

/// `hash` ran on connection `conn` of `endpoint` during an operation that
/// started when the NOSCRIPT count was `seen`.
pub(crate) fn learned(engine: TypeId, endpoint: u32, hash: &str, conn: u64, seen: u64) {
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    let list = known.entry((engine, endpoint)).or_default();
    match list.iter_mut().find(|(h, _, _)| h == hash) {
        Some(record) => (record.1, record.2) = (conn, seen),
        None => list.push((hash.to_string(), conn, seen)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_known_on_a_connection_only_once_it_ran_there() {
        // An engine type of its own: no other test shares these records.
        let engine = TypeId::of::<[u8; 901]>();
        let endpoints = [901, 902];
        let first = Learning::new(engine, &endpoints, "h1");
        assert!(!first.is_final(0, 7) && !first.is_final(1, 8));
        first.record(|i| i == 0);
        let next = Learning::new(engine, &endpoints, "h1");
        assert!(next.is_final(0, 7), "ran on connection 7 of server 0");
        assert!(
            !next.is_final(0, 9),
            "another connection (a restarted server) has none"
        );
        assert!(!next.is_final(1, 8), "it did not run on server 1");
        assert!(
            !Learning::new(engine, &endpoints, "h2").is_final(0, 7),
            "another script"
        );
    }
}
