//! The wire between JavaScript and native: what an operation's outcome
//! looks like (`done`), how an error crosses (`error`), and the codes and
//! bits JavaScript passes (`codes`).

pub(crate) mod codes;
pub(crate) mod done;
pub(crate) mod error;
