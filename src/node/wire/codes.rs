//! The operation codes and option bits JavaScript passes with each
//! operation, per face (lib/ has the other half of each table).

/// The redislock face's options beyond redislock 1.3.0 (lib/redislock/lock.js, lib/native/codes.js).
pub(crate) mod lockx {
    pub(crate) const ACQUIRE: u32 = 0;
    pub(crate) const RELEASE: u32 = 1;
    pub(crate) const EXTEND: u32 = 2;
    pub(crate) const INSPECT: u32 = 3;
}

/// Redlock (lib/redislock/quorum.js).
pub(crate) mod quorum {
    pub(crate) const ACQUIRE: u32 = 0;
    pub(crate) const RELEASE: u32 = 1;
    pub(crate) const EXTEND: u32 = 2;
}

/// The Redisson face (lib/redisson/rlock.js).
pub(crate) mod redisson {
    pub(crate) const TRY_LOCK: u32 = 0;
    pub(crate) const UNLOCK: u32 = 1;
    pub(crate) const FORCE_UNLOCK: u32 = 2;
    pub(crate) const IS_LOCKED: u32 = 3;
}

/// The option bits of a redislock or Redlock operation.
pub(crate) mod bits {
    pub(crate) const FENCING: u32 = 1;
    pub(crate) const WAKE: u32 = 2;
    pub(crate) const KEEP: u32 = 4;
}
