//! Each face's operations, written once for both engines: each takes
//! JavaScript's arguments and returns its future over the engine's
//! connections and timer (engine/contract.rs); src/node/entries.rs runs
//! them.

pub(crate) mod lockx;
pub(crate) mod quorum;
pub(crate) mod redisson;
pub(crate) mod redlock;
pub(crate) mod semaphore;
pub(crate) mod synchronizers;
pub(crate) mod token;
pub(crate) mod weblocks;
