//! How a core error crosses into JavaScript: the one place the `[CODE]
//! message` form that the JavaScript front parses is made.

use napi::bindgen_prelude::*;

use crate::error::Error as CoreError;

/// The one place the `[CODE] message` form that JavaScript parses is made.
pub(crate) fn wire_message(err: &CoreError) -> String {
    format!("[{}] {}", err.code(), err.message())
}

pub(crate) fn to_napi(err: CoreError) -> napi::Error {
    napi::Error::new(Status::GenericFailure, wire_message(&err))
}
