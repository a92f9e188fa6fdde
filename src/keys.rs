//! Names of the helper keys and channels that go with a lock key (the
//! fencing counter, the release channel), built so that Redis Cluster puts
//! them in the lock key's hash slot: a script may then touch both, and a
//! cluster routes both to the same node.
//!
//! Redis hashes a key by its hash tag — the text between the first `{` and
//! the first `}` after it, when that is not empty — or else by the whole
//! key. A key with a tag keeps it when a suffix is appended; a key without
//! one is wrapped in braces so that its whole text becomes the tag. That is
//! impossible only for a key that has no tag but contains a `}` (the
//! wrapped key's tag would stop at it): such keys are refused.

use crate::error::{Error, Result};

/// The hash tag of `key`, as Redis Cluster reads it (`None`: the whole key
/// is hashed).
pub fn hash_tag(key: &str) -> Option<&str> {
    let open = key.find('{')?;
    let rest = &key[open + 1..];
    let close = rest.find('}')?;
    (close > 0).then(|| &rest[..close])
}

/// `<key>` with `suffix` appended, in `key`'s hash slot: `key:suffix` when
/// `key` has a hash tag, else `{key}:suffix`. `what` names the helper in the
/// error for a key that cannot have one.
pub fn companion(key: &str, suffix: &str, what: &str) -> Result<String> {
    if hash_tag(key).is_some() {
        return Ok(format!("{key}:{suffix}"));
    }
    if key.contains('}') {
        return Err(Error::InvalidArgument(format!(
            "The lock key {key:?} contains '}}' but no hash tag, so no {what} can share its \
             Redis Cluster hash slot; use a key without '}}' or with a hash tag such as {{name}}"
        )));
    }
    Ok(format!("{{{key}}}:{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CRC16/XMODEM, as Redis Cluster's `HASH_SLOT` uses it.
    fn crc16(data: &[u8]) -> u16 {
        let mut crc: u16 = 0;
        for &b in data {
            crc ^= u16::from(b) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc
    }

    fn slot(key: &str) -> u16 {
        crc16(hash_tag(key).unwrap_or(key).as_bytes()) % 16384
    }

    #[test]
    fn reads_hash_tags_as_redis_does() {
        assert_eq!(hash_tag("{user1000}.following"), Some("user1000"));
        assert_eq!(hash_tag("foo{}{bar}"), None);
        assert_eq!(hash_tag("foo{{bar}}zap"), Some("{bar"));
        assert_eq!(hash_tag("foo{bar}{zap}"), Some("bar"));
        assert_eq!(hash_tag("plain"), None);
        assert_eq!(hash_tag("a{b"), None);
        // CRC16/XMODEM's check value, and the slots Redis documents for
        // CLUSTER KEYSLOT.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot("somekey"), 11058);
        assert_eq!(slot("foo{hash_tag}"), 2515);
    }

    #[test]
    fn companions_share_the_key_slot() {
        for key in [
            "plain",
            "orders:42",
            "{user1000}.following",
            "foo{{bar}}zap",
            "a{b",
            "prefix:{tag}:x",
            "ünïcødé",
        ] {
            let c = companion(key, "fencing", "fencing counter").unwrap();
            assert_eq!(slot(&c), slot(key), "{key} -> {c}");
            assert_ne!(c, key);
        }
    }

    #[test]
    fn refuses_keys_that_cannot_have_one() {
        for key in ["a}b", "{}x", "x}{"] {
            let err = companion(key, "fencing", "fencing counter").unwrap_err();
            assert!(err.message().contains("hash tag"), "{key}: {err:?}");
        }
    }
}
