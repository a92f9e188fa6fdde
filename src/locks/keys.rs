//! Names of the helper keys and channels that go with a lock key (the
//! fencing counter, the release channel), built so that Redis Cluster puts
//! them in the lock key's hash slot: a script may then touch both, and a
//! cluster routes both to the same node.
//!
//! Redis hashes a key by its hash tag — the text between the first `{` and
//! the first `}` after it, when that is not empty — or else by the whole
//! key. A key with a tag keeps it when a suffix is appended; a key without
//! one and without a `}` is wrapped in braces, so that its whole text
//! becomes the tag. A key with neither a tag nor a way to be wrapped (it
//! contains a `}`, such as `order}42`) gets a tag of its own: a short text
//! that hashes to the key's slot, from a table with one for each of the
//! 16,384 slots ([`slot_tag`]).

use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The suffix of a lock's fencing counter (`fencing: true`).
pub const FENCING_SUFFIX: &str = "redislock-rs:fencing";
/// The suffix of a lock's release channel (`wakeOnRelease: true`), on one
/// server or on each server of a quorum lock.
pub const RELEASED_SUFFIX: &str = "redislock-rs:released";

/// How many hash slots Redis Cluster has.
pub const SLOTS: u16 = 16384;

/// The hash tag of `key`, as Redis Cluster reads it (`None`: the whole key
/// is hashed).
pub fn hash_tag(key: &str) -> Option<&str> {
    let open = key.find('{')?;
    let rest = &key[open + 1..];
    let close = rest.find('}')?;
    (close > 0).then(|| &rest[..close])
}

/// CRC16/XMODEM (polynomial 0x1021, initial value 0), one byte at a time.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

fn crc16_step(crc: u16, byte: u8) -> u16 {
    (crc << 8) ^ CRC16_TABLE[usize::from((crc >> 8) as u8 ^ byte)]
}

fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0, |crc, &b| crc16_step(crc, b))
}

/// The Redis Cluster hash slot of `key` (`CLUSTER KEYSLOT`).
pub fn key_slot(key: &str) -> u16 {
    crc16(hash_tag(key).unwrap_or(key).as_bytes()) % SLOTS
}

/// The characters of [`slot_tag`]s, in the order they are tried.
const TAG_CHARS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The longest [`slot_tag`]: three characters already cover every slot
/// (a test checks it); four is a margin that is never reached.
const TAG_MAX: usize = 4;

/// One tag per slot, NUL-padded.
type Tags = Box<[[u8; TAG_MAX]]>;

/// For each slot, the first text of `TAG_CHARS` (shortest first, then in
/// `TAG_CHARS` order) that hashes to it. Deterministic, so the same key
/// always gets the same helper names, in every process and version.
fn tags() -> &'static Tags {
    static TAGS: OnceLock<Tags> = OnceLock::new();
    TAGS.get_or_init(|| {
        let mut tags: Tags = vec![[0u8; TAG_MAX]; usize::from(SLOTS)].into_boxed_slice();
        let mut missing = usize::from(SLOTS);
        let mut text = [0u8; TAG_MAX];
        for len in 1..=TAG_MAX {
            fill(&mut tags, &mut missing, &mut text, 0, len, 0);
            if missing == 0 {
                break;
            }
        }
        tags
    })
}

/// Tries every text of `len` characters that starts with `text[..at]`
/// (whose CRC is `crc`), recording each slot's first.
fn fill(
    tags: &mut Tags,
    missing: &mut usize,
    text: &mut [u8; TAG_MAX],
    at: usize,
    len: usize,
    crc: u16,
) {
    for &c in TAG_CHARS {
        if *missing == 0 {
            return;
        }
        text[at] = c;
        let next = crc16_step(crc, c);
        if at + 1 < len {
            fill(tags, missing, text, at + 1, len, next);
            continue;
        }
        let slot = usize::from(next % SLOTS);
        if tags[slot][0] == 0 {
            tags[slot] = [0; TAG_MAX];
            tags[slot][..len].copy_from_slice(&text[..len]);
            *missing -= 1;
        }
    }
}

/// A short alphanumeric text whose hash slot is `slot` (`None` only for a
/// slot ≥ 16,384). The table behind it is built on first use.
pub fn slot_tag(slot: u16) -> Option<&'static str> {
    let tag = tags().get(usize::from(slot))?;
    let len = tag.iter().position(|&b| b == 0).unwrap_or(TAG_MAX);
    std::str::from_utf8(&tag[..len])
        .ok()
        .filter(|t| !t.is_empty())
}

/// `<key>` with `suffix` appended, in `key`'s hash slot: `key:suffix` when
/// `key` has a hash tag, else `{key}:suffix` (both as they always were),
/// else — a key with a `}` but no tag, or the empty key — `{T}key:suffix`, `T` the
/// [`slot_tag`] of the key's slot. `what` names the helper in the error
/// that cannot happen (a slot without a tag).
pub fn companion(key: &str, suffix: &str, what: &str) -> Result<String> {
    if hash_tag(key).is_some() {
        return Ok(format!("{key}:{suffix}"));
    }
    // (Wrapped, the empty key would be an empty tag: not a tag at all.)
    if !key.is_empty() && !key.contains('}') {
        return Ok(format!("{{{key}}}:{suffix}"));
    }
    match slot_tag(key_slot(key)) {
        Some(tag) => Ok(format!("{{{tag}}}{key}:{suffix}")),
        None => Err(Error::Internal(format!(
            "no hash tag found for the slot of {key:?}, so no {what} can share it"
        ))),
    }
}

/// The channel a release of `key` is announced on (`wakeOnRelease`), in
/// its hash slot; every face's lock of `key` uses the same one, so either
/// face's waiters wake.
pub fn release_channel(key: &str) -> Result<String> {
    companion(key, RELEASED_SUFFIX, "release channel")
}

/// Java Redisson's `prefixName(prefix, name)`: `prefix:name` when the name
/// has a `{`, else `prefix:{name}` (RedissonObject.java). Not
/// [`companion`]: Redisson's own rule, which Java processes share.
pub fn prefix_name(prefix: &str, name: &str) -> String {
    match name.contains('{') {
        true => format!("{prefix}:{name}"),
        false => format!("{prefix}:{{{name}}}"),
    }
}

/// Java Redisson's `suffixName(name, suffix)`: `name:suffix` when the name
/// has a `{`, else `{name}:suffix`.
pub fn suffix_name(name: &str, suffix: &str) -> String {
    format!("{}:{suffix}", redisson_tagged(name))
}

/// The name as Redisson's `suffixName` begins it: itself when it has a
/// `{`, else `{name}`.
pub fn redisson_tagged(name: &str) -> String {
    match name.contains('{') {
        true => name.to_string(),
        false => format!("{{{name}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(key: &str) -> u16 {
        key_slot(key)
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
        let mut keys: Vec<String> = [
            "plain",
            "orders:42",
            "{user1000}.following",
            "foo{{bar}}zap",
            "a{b",
            "prefix:{tag}:x",
            "ünïcødé",
            // No usable hash tag, but a '}': the whole key is hashed.
            "order}42",
            "}",
            "{}",
            "{}x",
            "x}{",
            "a}b",
            "a{}b{c}",
            "foo{}{bar}",
            "}{",
            "}}}",
            "{",
            "",
        ]
        .iter()
        .map(|k| k.to_string())
        .collect();
        // A tag, an empty tag, or a stray '}' around many other texts.
        for i in 0..2000 {
            keys.push(format!("k{i}"));
            keys.push(format!("k}}{i}"));
            keys.push(format!("{{}}k{i}"));
            keys.push(format!("k{{{i}}}"));
            keys.push(format!("{i}}}{{"));
        }
        for key in &keys {
            for suffix in ["redislock-rs:fencing", "redislock-rs:released"] {
                let c = companion(key, suffix, "fencing counter").unwrap();
                assert_eq!(slot(&c), slot(key), "{key:?} -> {c:?}");
                assert_ne!(&c, key);
                assert!(c.ends_with(suffix), "{c:?}");
            }
        }
    }

    #[test]
    fn every_slot_has_a_short_tag_that_hashes_to_it() {
        let started = std::time::Instant::now();
        let first = slot_tag(0);
        let built = started.elapsed();
        let mut longest = 0;
        for s in 0..SLOTS {
            let tag = slot_tag(s).unwrap();
            assert!(
                !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{tag:?}"
            );
            assert_eq!(slot(&format!("{{{tag}}}")), s, "{tag:?}");
            assert_eq!(crc16(tag.as_bytes()) % SLOTS, s, "{tag:?}");
            longest = longest.max(tag.len());
        }
        assert!(
            longest <= 3,
            "three characters cover every slot; got {longest}"
        );
        assert_eq!(slot_tag(SLOTS), None);
        // Built once: the same answers, from the same table.
        assert_eq!(slot_tag(0), first);
        eprintln!("slot tag table: built in {built:?}, longest tag {longest}");
    }

    #[test]
    fn keys_that_had_a_companion_keep_its_name() {
        // What existing users' counters and channels are called.
        for (key, want) in [
            ("plain", "{plain}:redislock-rs:fencing"),
            ("orders:42", "{orders:42}:redislock-rs:fencing"),
            ("a{b", "{a{b}:redislock-rs:fencing"),
            ("{user1000}.x", "{user1000}.x:redislock-rs:fencing"),
            ("foo{{bar}}zap", "foo{{bar}}zap:redislock-rs:fencing"),
            ("{{a}}", "{{a}}:redislock-rs:fencing"),
            // No tag and a '}': a tag of the key's slot in front.
            ("order}42", "{4oZ}order}42:redislock-rs:fencing"),
        ] {
            let c = companion(key, "redislock-rs:fencing", "fencing counter").unwrap();
            assert_eq!(c, want, "{key:?}");
        }
    }
}
