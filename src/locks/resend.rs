//! Commands sent again after the connection broke under their first try:
//! reads and scripts whose second run changes nothing the first did not
//! ([`eval_retrying`], [`query_retrying`]), and what a compare-and-act
//! command (a release, an extend, a renewal) sent again may conclude
//! ([`resent`]): the first try may have run before its reply was lost.
//! Shared by every lock kind.

use redis::aio::ConnectionLike;
use redis::Value;

use crate::error::{Error, Result};
use crate::transport::lua::Lua;

/// Runs `lua` (see [`Lua::run`]), once more if the connection broke under
/// the first try: for scripts that only read, or whose second run changes
/// nothing the first did not.
pub(crate) async fn eval_retrying<C: ConnectionLike>(
    conn: &mut C,
    lua: &Lua,
    keys: &[&str],
    args: &[&[u8]],
) -> Result<Value> {
    match lua.run(conn, keys, args).await.map_err(Error::from) {
        Err(Error::Connection(_)) => Ok(lua.run(conn, keys, args).await?),
        other => other,
    }
}

/// Sends `cmd`, once more if the connection broke under the first try:
/// for commands that only read.
pub(crate) async fn query_retrying<C, T>(conn: &mut C, cmd: &redis::Cmd) -> Result<T>
where
    C: ConnectionLike,
    T: redis::FromRedisValue,
{
    match cmd.query_async(conn).await.map_err(Error::from) {
        Err(Error::Connection(_)) => Ok(cmd.query_async(conn).await?),
        other => other,
    }
}

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
