//! The core's error type. Expected outcomes ("not acquired", "not ours any
//! more") are never errors: they come back as `false`. An `Error` is a real
//! failure: bad arguments, an unreachable server, a timeout or a Redis error.
//! Messages never contain credentials.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The caller passed something the core cannot use.
    InvalidArgument(String),
    /// No connection to Redis could be made.
    Connection(String),
    /// Redis did not answer within the command timeout. For an acquire the
    /// outcome is unknown; the core has already tried to undo it.
    Timeout(String),
    /// Redis answered with an error, or the connection broke mid-command.
    Redis(String),
    /// A bug or a broken environment on our side (a caught panic, no runtime).
    Internal(String),
    /// `replicas: N`: fewer than N replicas acknowledged the write in time
    /// (the grant was released), or the primary has fewer than N.
    NotReplicated(String),
}

impl Error {
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgument(m)
            | Error::Connection(m)
            | Error::Timeout(m)
            | Error::Redis(m)
            | Error::Internal(m)
            | Error::NotReplicated(m) => m,
        }
    }

    /// A short machine-readable code, used by the JavaScript front.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidArgument(_) => "ERR_INVALID_ARG",
            Error::Connection(_) => "ERR_REDIS_CONNECTION",
            Error::Timeout(_) => "ERR_REDIS_TIMEOUT",
            Error::Redis(_) => "ERR_REDIS",
            Error::Internal(_) => "ERR_INTERNAL",
            Error::NotReplicated(_) => "ERR_NOT_REPLICATED",
        }
    }

    fn from_redis(err: &redis::RedisError) -> Self {
        let text = err.to_string();
        if err.is_timeout() {
            Error::Timeout(format!("Redis command timed out: {text}"))
        } else if err.is_connection_refusal() || err.is_connection_dropped() || err.is_io_error() {
            Error::Connection(format!("Redis connection failed: {text}"))
        } else {
            // A server's error reads as Redis wrote it ("WRONGTYPE Operation
            // against …"), as the JavaScript clients show it.
            match (err.code(), err.detail()) {
                (Some("NOPERM"), Some(detail)) if refused_script(detail) => Error::Redis(format!(
                    "This Redis user may not run scripts (NOPERM {detail}), and this lock needs \
                     them: grant the user +@scripting (only the plain token lock can do \
                     without them, on Valkey 9.0 or later: SET … IFEQ and DELIFEQ)"
                )),
                (Some(code), Some(detail)) => Error::Redis(format!("{code} {detail}")),
                _ => Error::Redis(text),
            }
        }
    }
}

/// Whether a NOPERM `detail` refuses a script command (EVAL, EVALSHA and
/// their read-only forms, SCRIPT), which the lock scripts need.
fn refused_script(detail: &str) -> bool {
    let d = detail.to_ascii_lowercase();
    [
        "'eval'",
        "'evalsha'",
        "'eval_ro'",
        "'evalsha_ro'",
        "'script|",
    ]
    .iter()
    .any(|c| d.contains(c))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Self {
        Error::from_redis(&err)
    }
}

pub type Result<T> = std::result::Result<T, Error>;
