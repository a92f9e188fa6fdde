//! What a compare-and-act command (a release, an extend, a renewal) sent
//! again after the connection broke under its first try may conclude: the
//! first try may have run before its reply was lost. Shared by every lock
//! kind whose scripts compare a token and act.

use crate::error::{Error, Result};

/// What a compare-and-act command's first try did to the key, if it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resend {
    /// It left the key ours (an extend, a renewal): a resend that finds the
    /// key not ours tells the truth.
    Keeps,
    /// It removed the key (a release): a resend that finds the key not ours
    /// cannot tell "the first try removed it" from "it had expired".
    Removes,
}

/// The outcome of a compare-and-act command sent again (`again`: its reply,
/// 1 when it acted) after the connection broke under its first try
/// (`broken`), which may have run before the reply was lost. A resend that
/// acted: done. One that found the key not ours after a first try that
/// would have removed it: unknown, so the broken connection is reported
/// (with what was seen), never a "not ours" that may be false.
pub(crate) fn resent(broken: Error, again: Result<i64>, first: Resend) -> Result<bool> {
    match (again?, first) {
        (1, _) => Ok(true),
        (_, Resend::Keeps) => Ok(false),
        (_, Resend::Removes) => Err(Error::Connection(format!(
            "{broken}; sent again, it found the lock no longer held: the first try may have \
             released it before the connection broke, so whether this release took effect \
             is unknown"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resent_release_that_finds_nothing_is_unknown_not_expired() {
        let broken = || Error::Connection("Redis connection failed: reset".into());
        assert_eq!(resent(broken(), Ok(1), Resend::Removes), Ok(true));
        assert_eq!(resent(broken(), Ok(1), Resend::Keeps), Ok(true));
        // An extend's first try leaves the key ours: "not ours" is the truth.
        assert_eq!(resent(broken(), Ok(0), Resend::Keeps), Ok(false));
        // A release's may have removed it: the broken connection, with what was seen.
        let err = resent(broken(), Ok(0), Resend::Removes).unwrap_err();
        assert_eq!(err.code(), "ERR_REDIS_CONNECTION");
        assert!(
            err.message().starts_with("Redis connection failed: reset;"),
            "{err}"
        );
        assert!(err.message().contains("unknown"), "{err}");
        // A resend that failed too reports its own failure.
        let timeout = Error::Timeout("late".into());
        assert_eq!(
            resent(broken(), Err(timeout.clone()), Resend::Removes),
            Err(timeout)
        );
    }
}
