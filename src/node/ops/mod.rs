//! Each face's operations, as both engines run them: one request from
//! JavaScript's arguments, one `run` over whatever connection and timer the
//! engine has.

pub(crate) mod lockx;
pub(crate) mod quorum;
pub(crate) mod redisson;
