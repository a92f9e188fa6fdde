//! The cancel slots: acquires that JavaScript can still cancel (their
//! `AbortSignal`), by (keeper environment, cancel id), registered before
//! the operation starts and gone when it ends.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::error::Result;
use crate::node::wire::codes::LockOp;
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::cancel::Cancel;

/// The acquires that can be cancelled now, by (environment, cancel id).
type Cancels = HashMap<(u32, u32), Arc<Cancel>>;
static CANCELS: LazyLock<Mutex<Cancels>> = LazyLock::new(Mutex::default);

/// An acquire's registration for [`cancel`]; unregistered when dropped
/// (the operation is over).
pub(crate) struct CancelSlot {
    key: (u32, u32),
    cancel: Arc<Cancel>,
}

impl CancelSlot {
    pub(crate) fn cancel(&self) -> &Cancel {
        &self.cancel
    }
}

impl Drop for CancelSlot {
    fn drop(&mut self) {
        let mut map = CANCELS.lock().unwrap_or_else(|p| p.into_inner());
        if map
            .get(&self.key)
            .is_some_and(|c| Arc::ptr_eq(c, &self.cancel))
        {
            map.remove(&self.key);
        }
    }
}

/// Registers an operation's cancel id before it is started, so that a
/// [`cancel`] right after the call is never lost: `Slot::Env` is its
/// environment and `Slot::Cancel` its cancel id (0: none).
pub(crate) fn cancel_slot_of(nums: &Nums) -> Option<CancelSlot> {
    let (env, id) = (nums.get(Slot::Env), nums.get(Slot::Cancel));
    if !(id >= 1.0 && id <= u32::MAX as f64 && env >= 0.0 && env <= u32::MAX as f64) {
        return None;
    }
    let key = (env as u32, id as u32);
    let cancel = Arc::new(Cancel::default());
    let mut map = CANCELS.lock().unwrap_or_else(|p| p.into_inner());
    map.insert(key, Arc::clone(&cancel));
    Some(CancelSlot { key, cancel })
}

/// [`cancel_slot_of`] for an operation that can be cancelled only while
/// it acquires: `op`'s numbers, when they are usable.
pub(crate) fn acquire_slot(op: LockOp, nums: &Result<Nums>) -> Option<CancelSlot> {
    match (op, nums) {
        (LockOp::Acquire, Ok(nums)) => cancel_slot_of(nums),
        _ => None,
    }
}

/// Cancels the acquire registered as `id` in `env`, if it is still running.
pub(crate) fn cancel(env: u32, id: u32) {
    let found = {
        let map = CANCELS.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(env, id)).cloned()
    };
    if let Some(c) = found {
        c.cancel();
    }
}

/// Cancels every acquire of environment `env` still waiting (it is torn
/// down).
pub(crate) fn cancel_env(env: u32) {
    let waiting: Vec<Arc<Cancel>> = {
        let map = CANCELS.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .filter(|((e, _), _)| *e == env)
            .map(|(_, c)| Arc::clone(c))
            .collect()
    };
    for c in waiting {
        c.cancel();
    }
}
