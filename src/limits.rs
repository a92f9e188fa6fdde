//! The limits every argument from JavaScript is held to, and their messages,
//! stated once: the longest time in ms (JavaScript's safe integers), how a
//! number from JavaScript becomes a whole count of ms or a small id, and
//! the words an `InvalidArgument` uses for each.

use crate::error::{Error, Result};

/// Longest TTL, extension, lease or wait accepted, in ms (JavaScript's
/// safe integers).
pub const MAX_MS: u64 = (1 << 53) - 1;

/// `Some(n)` when `x` is an integer in 1..=MAX_MS.
pub fn positive_int(x: f64) -> Option<u64> {
    (x.is_finite() && x >= 1.0 && x.fract() == 0.0 && x <= MAX_MS as f64).then_some(x as u64)
}

/// `Some(n)` when `x` is an integer in 0..=MAX_MS.
pub fn whole_ms(x: f64) -> Option<u64> {
    (x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= MAX_MS as f64).then_some(x as u64)
}

/// `Some(n)` when `x` is an integer in 0..=u32::MAX (ids, counts, option
/// bits).
pub fn whole_u32(x: f64) -> Option<u32> {
    (x.is_finite() && x >= 0.0 && x <= u32::MAX as f64 && x.fract() == 0.0).then_some(x as u32)
}

/// Whether an already whole `ms` is in 1..=MAX_MS.
pub fn is_positive_ms(ms: u64) -> bool {
    ms != 0 && ms <= MAX_MS
}

/// An extension from JavaScript's number: an integer in 1..=MAX_MS.
pub fn extension_from_number(ms: f64) -> Result<u64> {
    positive_int(ms).ok_or_else(|| not_positive_ms("extension", ms))
}

/// A lock timeout (TTL) outside 1..=MAX_MS.
pub fn invalid_timeout(ttl_ms: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "Invalid timeout {ttl_ms}: the lock timeout must be a positive integer number of milliseconds"
    ))
}

/// `what` (an extension, a lease time, ...) outside 1..=MAX_MS.
pub fn not_positive_ms(what: &str, x: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "Invalid {what} {x}: expected a positive integer number of milliseconds"
    ))
}

/// `what` (a wait time, a bound) outside 0..=MAX_MS.
pub fn not_whole_ms(what: &str, x: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "Invalid {what} {x}: expected a non-negative integer number of milliseconds"
    ))
}

/// A lock's `what` (`"key"`, `"name"`) must not be empty.
pub fn check_not_empty(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "Invalid lock {what} \"\": the {what} must be a non-empty string"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_from_javascript() {
        assert_eq!(positive_int(1.0), Some(1));
        assert_eq!(positive_int(MAX_MS as f64), Some(MAX_MS));
        for bad in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY, 1e300] {
            assert_eq!(positive_int(bad), None, "{bad}");
        }
        assert_eq!(whole_ms(0.0), Some(0));
        assert_eq!(whole_ms(-1.0), None);
        assert_eq!(whole_u32(u32::MAX as f64), Some(u32::MAX));
        assert_eq!(whole_u32(0.5), None);
        assert!(is_positive_ms(MAX_MS) && !is_positive_ms(0) && !is_positive_ms(MAX_MS + 1));
    }

    #[test]
    fn messages_name_what_was_wrong() {
        let msg = |e: Error| e.to_string();
        assert!(msg(extension_from_number(0.0).unwrap_err())
            .contains("Invalid extension 0: expected a positive integer number of milliseconds"));
        assert!(msg(check_not_empty("key", "").unwrap_err())
            .contains("Invalid lock key \"\": the key must be a non-empty string"));
        assert!(msg(check_not_empty("name", "").unwrap_err())
            .contains("Invalid lock name \"\": the name must be a non-empty string"));
        assert!(check_not_empty("key", "k").is_ok());
    }
}
