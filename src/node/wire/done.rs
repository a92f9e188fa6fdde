//! Finished operations as JavaScript's `onDone(codes, errors)` receives
//! them, the same for both engines: each code is `id << 2 | outcome`
//! (0 = false, 1 = true, 2 = error, whose `[CODE] message` is the next
//! string in `errors`, 3 = true with a value, the next string in `errors`:
//! a fencing token, a Redisson unlock that released the last hold; see
//! lib/native/bridge.js). Written once, here.

use napi::bindgen_prelude::FnArgs;

use crate::error::{Error as CoreError, Result};
use crate::node::wire::error::wire_message;

const DONE_ERROR: u32 = 2;

const DONE_VALUE: u32 = 3;

/// An operation's outcome on the wire: 0 (false), 1 (true) or 3 (true, with
/// a value).
pub(crate) trait Outcome {
    fn wire(self) -> (u32, Option<String>);
}

impl Outcome for bool {
    fn wire(self) -> (u32, Option<String>) {
        (u32::from(self), None)
    }
}

/// For outcomes with a third value: 0, 1, and 3 (with an empty value).
impl Outcome for u32 {
    fn wire(self) -> (u32, Option<String>) {
        match self & 3 {
            DONE_VALUE => (DONE_VALUE, Some(String::new())),
            DONE_ERROR => (0, None),
            code => (code, None),
        }
    }
}

/// An outcome that may carry a string.
pub(crate) enum Reply {
    No,
    Yes,
    With(String),
}

impl Outcome for Reply {
    fn wire(self) -> (u32, Option<String>) {
        match self {
            Reply::No => (0, None),
            Reply::Yes => (1, None),
            Reply::With(value) => (DONE_VALUE, Some(value)),
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
            Ok(outcome) => {
                let (code, value) = outcome.wire();
                self.codes.push(id << 2 | code);
                if let Some(v) = value {
                    self.errors.push(v);
                }
            }
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
