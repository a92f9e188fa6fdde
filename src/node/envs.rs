//! The keeper's environment registry: each JavaScript environment (the
//! main thread, each worker) has a [`Liveness`] (its heartbeat, and the
//! losses it has yet to collect), by the id JavaScript holds.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::keeper::{self, Liveness, Watch};
use crate::limits;
use crate::node::cancels;
use crate::node::wire::nums::{Nums, Slot};

/// Every live JavaScript environment's [`Liveness`], by the id JavaScript
/// holds; an environment's entry goes with it ([`end_env`]), and its id is
/// not given out again.
#[derive(Default)]
struct Envs {
    by_id: HashMap<u32, Arc<Liveness>>,
    next: u32,
}

static ENVS: LazyLock<Mutex<Envs>> = LazyLock::new(Mutex::default);

fn envs() -> std::sync::MutexGuard<'static, Envs> {
    ENVS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The keeper's bounds for JavaScript's hold `hold` in environment `env`
/// (`max_hold_ms` 0: none).
fn watch(env: u32, hold: u32, max_lag_ms: u64, max_hold_ms: u64) -> Result<Watch> {
    Ok(Watch {
        liveness: liveness(env)?,
        hold,
        max_lag: Duration::from_millis(max_lag_ms),
        max_hold: (max_hold_ms > 0).then(|| Duration::from_millis(max_hold_ms)),
    })
}

/// The keeper's bounds of a kept lock as the faces send them: `Env`,
/// `Hold`, `MaxLagMs` (the lag bound lib/common/keeper.js computes, one
/// policy for every face) and `MaxHoldMs` (0: none). One reader, one error
/// for a bad value, whichever face keeps the lock.
pub(crate) fn watch_of(nums: &Nums) -> Result<Watch> {
    let bad = |slot: Slot, what: &str| {
        let x = nums.get(slot);
        Error::InvalidArgument(format!("Invalid {what} {x} for a kept lock"))
    };
    let id =
        |slot: Slot, what: &str| limits::whole_u32(nums.get(slot)).ok_or_else(|| bad(slot, what));
    let max_lag = limits::positive_int(nums.get(Slot::MaxLagMs))
        .ok_or_else(|| bad(Slot::MaxLagMs, "maxEventLoopLagMs"))?;
    let max_hold = limits::whole_ms(nums.get(Slot::MaxHoldMs))
        .ok_or_else(|| bad(Slot::MaxHoldMs, "maxHoldMs"))?;
    watch(
        id(Slot::Env, "env")?,
        id(Slot::Hold, "hold")?,
        max_lag,
        max_hold,
    )
}

pub(crate) fn liveness(env: u32) -> Result<Arc<Liveness>> {
    envs()
        .by_id
        .get(&env)
        .cloned()
        .ok_or_else(|| Error::InvalidArgument(format!("unknown keeper environment {env}")))
}

/// A new environment's id.
pub(crate) fn new_env() -> u32 {
    let mut envs = envs();
    let mut id = envs.next;
    while envs.by_id.contains_key(&id) {
        id = id.wrapping_add(1);
    }
    envs.next = id.wrapping_add(1);
    envs.by_id.insert(id, Liveness::new());
    id
}

/// Environment `env` is torn down (its cleanup hook): its leases stop at
/// once (their keys expire by TTL), its acquires still waiting are
/// cancelled, and its state is freed.
pub(crate) fn end_env(env: u32) {
    let removed = envs().by_id.remove(&env);
    if let Some(l) = removed {
        keeper::end(&l);
    }
    cancels::cancel_env(env);
}

/// Beats `env`'s heart and collects its losses and renewals, flat: hold,
/// reason (a `Lost` code; 0: renewed), ...
pub(crate) fn poll(env: u32) -> Result<Vec<u32>> {
    let l = liveness(env)?;
    l.beat();
    let renewed = l.drain_renewals().into_iter().flat_map(|hold| [hold, 0]);
    Ok(renewed
        .chain(
            l.drain()
                .into_iter()
                .flat_map(|(hold, why)| [hold, why as u32]),
        )
        .collect())
}
