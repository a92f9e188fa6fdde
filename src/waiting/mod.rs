//! The one wait loop and what ends a pause: `retry` runs attempts on a
//! schedule, `wakeups` hears of releases (pub/sub, streams, sharded
//! pub/sub), `cancel` ends a wait from outside, `timer` is the clock the
//! engine supplies.

pub mod cancel;
pub mod retry;
pub mod timer;
pub mod wakeups;
