//! How a core error crosses into JavaScript: an `Error` whose `code` is
//! the core's (`ERR_REDIS_TIMEOUT`, …) and whose message is the core's
//! message, thrown by a synchronous call or delivered with an outcome.

use napi::bindgen_prelude::*;
use napi::sys;

use crate::error::Error as CoreError;

/// The error of a synchronous call that failed in the core: thrown as an
/// `Error` with the core's `code`.
pub(crate) type Thrown = napi::Error<&'static str>;

pub(crate) fn to_napi(err: CoreError) -> Thrown {
    napi::Error::new(err.code(), err.message())
}

/// `err` as a JavaScript `Error` with its `code`.
///
/// # Safety
/// `env` is a live environment and this runs on its thread.
// SAFETY: `unsafe` for its caller's contract above; the body only passes
// `env` to napi-rs's error conversion, which has the same contract.
pub(crate) unsafe fn js_error(env: sys::napi_env, err: &CoreError) -> sys::napi_value {
    // SAFETY: the caller's contract.
    unsafe { JsError::from(to_napi(err.clone())).into_value(env) }
}
