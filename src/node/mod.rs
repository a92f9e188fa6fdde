//! The napi surface: converts JavaScript arguments, calls the core, returns
//! plain values. Here: the modules and the registrations that belong to no
//! engine (the keeper's environments, cancels, endpoint names). Beside it:
//! `connect` (`RedisConnection`), `targets` (the endpoint registry),
//! `runtime` (the tokio thread), `wake`, `envs` and `cancels` (shared
//! wiring), `relay` (commands through a client's own methods), `wire`
//! (outcomes, errors, codes, slots), `options` (the one reader of an operation's numbers into core
//! types), `ops` (each face's
//! operations), `engine` (the tokio and JS-thread engines that run them)
//! and `entries` (each operation's napi entries, declared once for both).

mod cancels;
#[cfg_attr(test, allow(dead_code))]
mod connect;
mod engine;
#[cfg_attr(test, allow(dead_code))]
mod entries;
#[cfg_attr(test, allow(dead_code))]
mod envs;
#[cfg_attr(test, allow(dead_code))]
mod loaded;
#[cfg_attr(test, allow(dead_code))]
mod ops;
#[cfg_attr(test, allow(dead_code))]
mod options;
#[cfg_attr(test, allow(dead_code))]
mod relay;
mod runtime;
#[cfg_attr(test, allow(dead_code))]
mod scripts;
mod targets;
mod wake;
mod wire;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::node::targets::target;
use crate::node::wire::error::to_napi;

/// Stops the watchdog renewals of every lock held under the Redisson
/// instance whose holder fields start with `prefix` (`Redisson.quit()`).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn stop_redisson_renewals(prefix: String) {
    ops::redisson::stop_renewals(&prefix);
}

/// A new JavaScript environment's id for the lease keeper (one per loaded
/// module instance: the main thread, each worker). When the environment is
/// torn down (a worker terminated, the process exiting), its cleanup hook
/// stops its leases and frees its state.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn keeper_env(env: Env) -> napi::Result<u32> {
    let id = envs::new_env();
    let hook = env.add_env_cleanup_hook(id, |id| {
        // A panic must not unwind into Node's teardown.
        let _ = std::panic::catch_unwind(|| envs::end_env(id));
    });
    if let Err(e) = hook {
        envs::end_env(id);
        return Err(e);
    }
    Ok(id)
}

/// The JavaScript thread of `env` is alive: beats its heart and returns the
/// locks it has lost since the last call, flat (hold id, reason code, ...).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn keeper_poll(env: u32) -> napi::Result<Vec<u32>, &'static str> {
    envs::poll(env).map_err(to_napi)
}

/// How long the kept lease of `key` (as Redis names it) for `token` is known
/// to run, in ms; -1 when the keeper does not keep it.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn keeper_remaining(
    endpoint: u32,
    key: String,
    token: String,
) -> napi::Result<f64, &'static str> {
    let target = target(endpoint).map_err(to_napi)?;
    Ok(ops::lockx::remaining(&target, &key, &token))
}

/// Cancels the acquire registered as `cancel_id` in keeper environment
/// `env` (its `AbortSignal` fired); nothing if it is over.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn lockx_cancel(env: u32, cancel_id: u32) {
    cancels::cancel(env, cancel_id);
}

/// Stops keeping the lease of `key` for `token` without touching Redis (the
/// lock object was garbage-collected while held: the key expires by TTL).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn keeper_drop(endpoint: u32, key: String, token: String) -> napi::Result<(), &'static str> {
    let target = target(endpoint).map_err(to_napi)?;
    ops::lockx::drop_kept(&target, &key, &token);
    Ok(())
}

/// The Redis Cluster slot of `key` (its hash tag's, if it has one): the
/// JavaScript faces check with it that keys meant to share a slot do.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn key_slot(key: String) -> u32 {
    u32::from(crate::locks::keys::key_slot(&key))
}

/// A node-redlock version's scripts, byte for byte.
#[napi(object)]
pub struct RedlockScripts {
    pub lock: String,
    pub unlock: String,
    pub extend: String,
}

/// The scripts of redlock `major` (4: 4.2.0's; 5: node-redlock
/// 5.0.0-beta.2's), for a face to hand to a user's transforms.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn redlock_scripts(major: u32) -> napi::Result<RedlockScripts, &'static str> {
    use crate::locks::redlock::*;
    let (lock, unlock, extend) = match major {
        4 => (LOCK_SCRIPT, UNLOCK_SCRIPT, EXTEND_SCRIPT),
        5 => (V5_LOCK_SCRIPT, V5_UNLOCK_SCRIPT, V5_EXTEND_SCRIPT),
        _ => {
            return Err(napi::Error::new(
                "ERR_INVALID_ARG",
                "no such redlock version",
            ))
        }
    };
    Ok(RedlockScripts {
        lock: lock.into(),
        unlock: unlock.into(),
        extend: extend.into(),
    })
}

/// The id of a node-redlock script set (registered once per `Redlock`).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn redlock_script_set(
    lock: String,
    unlock: String,
    extend: String,
) -> napi::Result<u32, &'static str> {
    scripts::register(lock, unlock, extend).map_err(to_napi)
}

/// How an endpoint is named in errors (`host:port/db`, `unix:path/db`).
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind)]
pub fn endpoint_name(endpoint: u32) -> napi::Result<String, &'static str> {
    Ok(target(endpoint).map_err(to_napi)?.endpoint.describe())
}
