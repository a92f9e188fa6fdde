//! Finished operations as JavaScript's `onDone(codes, errors)` receives
//! them, the same for both engines: each code is `id << 2 | outcome`
//! (0 = false, 1 = true, 2 = error, whose `[CODE] message` is the next one
//! in `errors`, 3 = true with more to say: a Redisson unlock that released
//! the last hold; see lib/operations.js). Written once, here.

use napi::bindgen_prelude::FnArgs;

use super::wire_message;
use crate::error::{Error as CoreError, Result};

const DONE_ERROR: u32 = 2;

/// An operation's outcome on the wire: 0 (false), 1 (true) or 3.
pub(crate) trait Outcome {
    fn code(self) -> u32;
}

impl Outcome for bool {
    fn code(self) -> u32 {
        u32::from(self)
    }
}

/// For outcomes with a third value: only 0, 1 and 3 are meaningful.
impl Outcome for u32 {
    fn code(self) -> u32 {
        if self == DONE_ERROR {
            0
        } else {
            self & 3
        }
    }
}

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
    pub(crate) fn record<T: Outcome>(&mut self, id: u32, outcome: Result<T>) {
        match outcome {
            Ok(value) => self.codes.push(id << 2 | value.code()),
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
