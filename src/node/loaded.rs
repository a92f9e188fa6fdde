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
