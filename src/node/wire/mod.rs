//! The wire between JavaScript and native: the tables both sides use
//! (`codes`: operations and option bits; `nums`: the slots of an
//! operation's numbers), what a finished operation looks like (`done`)
//! and how an error crosses (`error`).

pub(crate) mod codes;
pub(crate) mod done;
pub(crate) mod error;
pub(crate) mod nums;
