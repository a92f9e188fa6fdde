//! Every native operation entry, declared once: each line below becomes
//! `loop<Name>(endpoint, id, …)` for the JS-thread engine (a free function:
//! no class to unwrap per call) and `Completer.<name>(endpoint, id, …)`
//! for the tokio engine, both running the same operation of src/node/ops/
//! on that engine's connections and timer (engine/contract.rs). An entry
//! returns at once; the operation's outcome reaches JavaScript's `onDone`
//! as operation `id` (wire/done.rs).

use napi::bindgen_prelude::*;
use napi_derive::napi;

#[cfg(unix)]
use crate::node::engine::jsloop::{Loop, LoopEngine};
use crate::node::engine::tokio::{Completer, Tokio};
use crate::node::ops::{
    lockx, quorum, redisson, redlock, semaphore, synchronizers, token, weblocks,
};
use crate::node::wire::codes::{LockOp, RedissonOp, SyncOp, WebOp};

/// `name / loop_name (where: type; args…) => module::operation;` emits both
/// engines' entries for `operation`, which takes `where` and `args` and
/// returns the operation's future.
macro_rules! entries {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident / $loop_name:ident ($at:ident : $at_ty:ty; $($arg:ident : $ty:ty),*) => $m:ident :: $f:ident;
    )*) => {
        $(
            $(#[doc = $doc])*
            #[cfg(unix)]
            #[napi(catch_unwind)]
            #[allow(clippy::too_many_arguments)]
            pub fn $loop_name(env: Env, $at: $at_ty, id: u32, $($arg: $ty),*) -> Result<(), &'static str> {
                LoopEngine::spawn(&env, id, $m::$f::<Loop>($at, $($arg),*))
            }
        )*

        #[napi]
        impl Completer {
            $(
                $(#[doc = $doc])*
                #[napi(catch_unwind)]
                #[allow(clippy::too_many_arguments)]
                pub fn $name(&self, $at: $at_ty, id: u32, $($arg: $ty),*) {
                    self.spawn(id, $m::$f::<Tokio>($at, $($arg),*));
                }
            )*
        }
    };
}

entries! {
    /// Takes `key` for `token` (redislock 1.3.0's acquire): `true` when held.
    acquire / loop_acquire (endpoint: u32; key: String, token: String, ttl: f64, retries: f64, delay: f64) => token::acquire;
    /// Deletes `key` if `token` holds it: `false` when not ours.
    release / loop_release (endpoint: u32; key: String, token: String) => token::release;
    /// Sets `key`'s TTL to `ms` if `token` holds it: `false` when not ours.
    extend / loop_extend (endpoint: u32; key: String, token: String, ms: f64) => token::extend;
    /// An operation of the redislock face's options beyond redislock 1.3.0
    /// (`nums` by `Slot`).
    lockx / loop_lockx (endpoint: u32; op: LockOp, key: String, token: String, nums: &[f64]) => lockx::lockx;
    /// A Redlock operation on several endpoints (`nums` by `Slot`).
    quorum / loop_quorum (endpoints: &[u32]; op: LockOp, key: String, token: String, nums: &[f64]) => quorum::quorum;
    /// A node-redlock operation: script set `scripts`, resources `keys`
    /// (`nums` by `Slot`).
    redlock / loop_redlock (endpoints: &[u32]; op: LockOp, scripts: u32, keys: Vec<String>, value: String, nums: &[f64]) => redlock::redlock;
    /// A redis-semaphore face operation: the mutex or semaphore at `key`
    /// for holder `identifier` (`nums` by `Slot`).
    semaphore / loop_semaphore (endpoint: u32; op: LockOp, key: String, identifier: String, nums: &[f64]) => semaphore::semaphore;
    /// The same for the Redlock variants, on several endpoints.
    semaphores / loop_semaphores (endpoints: &[u32]; op: LockOp, key: String, identifier: String, nums: &[f64]) => semaphore::semaphores;
    /// A Redisson face operation (`nums` by `Slot`).
    redisson / loop_redisson (endpoint: u32; op: RedissonOp, name: String, channel: String, field: String, aux: String, adapter: String, nums: &[f64]) => redisson::redisson;
    /// A Java Redisson synchronizer operation (RSemaphore,
    /// RPermitExpirableSemaphore, RCountDownLatch) on the object `name`
    /// with its `channel` and `timeout` set, permit id `arg` (`nums` by `Slot`).
    rsync / loop_rsync (endpoint: u32; op: SyncOp, name: String, channel: String, timeout: String, arg: String, nums: &[f64]) => synchronizers::rsync;
    /// A Web Locks operation under key prefix `prefix` on the name whose
    /// UTF-16 code units are `tag` (hex): request `id` of manager `client`
    /// (`nums` by `Slot`).
    weblock / loop_weblock (endpoint: u32; op: WebOp, prefix: String, tag: String, id: String, client: String, nums: &[f64]) => weblocks::weblock;
}
