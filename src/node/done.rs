//! Finished operations as JavaScript's `onDone(codes, errors)` receives
//! them, the same for both engines: each code is `id << 2 | outcome`
//! (0 = false, 1 = true, 2 = error, whose `[CODE] message` is the next one
//! in `errors`; see lib/operations.js). Written once, here.

use napi::bindgen_prelude::FnArgs;

use super::wire_message;
use crate::error::{Error as CoreError, Result};

const DONE_FALSE: u32 = 0;
const DONE_TRUE: u32 = 1;
const DONE_ERROR: u32 = 2;

/// The arguments of `onDone`.
pub(crate) type DoneArgs = FnArgs<(Vec<u32>, Vec<String>)>;

/// A batch of finished operations.
#[derive(Default)]
pub(crate) struct Done {
    pub(crate) codes: Vec<u32>,
    pub(crate) errors: Vec<String>,
}

impl Done {
    /// Adds operation `id`'s outcome.
    pub(crate) fn record(&mut self, id: u32, outcome: Result<bool>) {
        match outcome {
            Ok(acted) => self
                .codes
                .push(id << 2 | if acted { DONE_TRUE } else { DONE_FALSE }),
            Err(err) => {
                self.codes.push(id << 2 | DONE_ERROR);
                self.errors.push(wire_message(&err));
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }
}

/// The outcome of an operation that panicked (caught): it must still settle.
pub(crate) fn panicked() -> CoreError {
    CoreError::Internal(
        "redislock-rs hit an internal error (a Rust panic, caught); please report it".into(),
    )
}
