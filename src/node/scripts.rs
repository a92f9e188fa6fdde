//! The script sets JavaScript registered for node-redlock locks, by id:
//! a `Redlock` instance registers its three scripts once (redlock's own,
//! or the user's transforms of them) and passes the id with each
//! operation. Equal sets share an id; sets live as long as the process.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::error::{Error, Result};
use crate::locks::redlock::Scripts;

#[derive(Default)]
struct Sets {
    by_id: Vec<Arc<Scripts>>,
    ids: HashMap<[String; 3], u32>,
}

static SETS: LazyLock<Mutex<Sets>> = LazyLock::new(Mutex::default);

/// The id of the set (lock, unlock, extend), registering it if new.
pub(crate) fn register(lock: String, unlock: String, extend: String) -> Result<u32> {
    let mut sets = SETS.lock().unwrap_or_else(|p| p.into_inner());
    let texts = [lock, unlock, extend];
    if let Some(id) = sets.ids.get(&texts) {
        return Ok(*id);
    }
    let id = u32::try_from(sets.by_id.len())
        .map_err(|_| Error::Internal("too many script sets".into()))?;
    sets.by_id
        .push(Arc::new(Scripts::new(&texts[0], &texts[1], &texts[2])));
    sets.ids.insert(texts, id);
    Ok(id)
}

/// The set registered as `id`.
pub(crate) fn scripts(id: u32) -> Result<Arc<Scripts>> {
    let sets = SETS.lock().unwrap_or_else(|p| p.into_inner());
    sets.by_id
        .get(id as usize)
        .cloned()
        .ok_or_else(|| Error::InvalidArgument(format!("no script set {id}")))
}
