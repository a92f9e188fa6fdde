//! Framing of RESP2 replies: where the first complete reply in a buffer
//! ends. The `redis` crate parses a complete reply into a `Value`
//! (`redis::parse_redis_value`) but its public parser cannot say how many
//! bytes it used, which a pipelined reader needs; this does only that.
//!
//! Iterative (no recursion on nested arrays) and bounded: a line longer than
//! [`MAX_LINE`] or a bulk string longer than [`MAX_BULK`] is a protocol
//! error, never an unbounded wait.

/// Longest status/error/integer/length line accepted.
pub const MAX_LINE: usize = 64 * 1024;
/// Largest bulk string accepted (Redis's own `proto-max-bulk-len` default).
pub const MAX_BULK: usize = 512 * 1024 * 1024;

/// The bytes are not RESP2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError(pub String);

/// `Ok(Some(n))`: `buf[..n]` is one complete reply. `Ok(None)`: more bytes
/// are needed.
pub fn frame(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    let mut pos = 0;
    // Replies still to read at this point (an array adds its elements).
    let mut remaining: u64 = 1;
    while remaining > 0 {
        remaining -= 1;
        let Some(&kind) = buf.get(pos) else {
            return Ok(None);
        };
        let Some(end) = line_end(buf, pos + 1)? else {
            return Ok(None);
        };
        let line = &buf[pos + 1..end];
        pos = end + 2;
        match kind {
            b'+' | b'-' | b':' => {}
            b'$' => {
                let n = length(line)?;
                if n >= 0 {
                    let n = n as usize;
                    if n > MAX_BULK {
                        return Err(FrameError(format!("bulk string of {n} bytes")));
                    }
                    let stop = pos + n + 2;
                    if buf.len() < stop {
                        return Ok(None);
                    }
                    if &buf[pos + n..stop] != b"\r\n" {
                        return Err(FrameError("bulk string not ended by CRLF".into()));
                    }
                    pos = stop;
                }
            }
            b'*' => {
                let n = length(line)?;
                if n > 0 {
                    remaining += n as u64;
                }
            }
            other => {
                return Err(FrameError(format!(
                    "unexpected reply type byte {other:#04x}"
                )));
            }
        }
    }
    Ok(Some(pos))
}

/// The value of one complete reply (as framed by [`frame`]) for the simple
/// types a lock sees on its hot path (`+`, `:`, `$`), or `None` for the
/// rest (errors, arrays), which `redis::parse_redis_value` handles. Equal to
/// what that parser returns, without its general machinery.
pub fn simple_value(reply: &[u8]) -> Option<redis::Value> {
    let (&kind, rest) = reply.split_first()?;
    let body = rest.strip_suffix(b"\r\n")?;
    match kind {
        b'+' if body == b"OK" => Some(redis::Value::Okay),
        b'+' => Some(redis::Value::SimpleString(
            std::str::from_utf8(body).ok()?.to_owned(),
        )),
        b':' => Some(redis::Value::Int(
            std::str::from_utf8(body).ok()?.parse().ok()?,
        )),
        b'$' if body == b"-1" => Some(redis::Value::Nil),
        b'$' => {
            let nl = body.iter().position(|&b| b == b'\r')?;
            let data = body.get(nl + 2..)?;
            let n: usize = std::str::from_utf8(&body[..nl]).ok()?.parse().ok()?;
            (data.len() == n).then(|| redis::Value::BulkString(data.to_vec()))
        }
        _ => None,
    }
}

/// Index of the `\r` ending the line that starts at `from`.
fn line_end(buf: &[u8], from: usize) -> Result<Option<usize>, FrameError> {
    let rest = buf.get(from..).unwrap_or(&[]);
    match rest.iter().position(|&b| b == b'\r') {
        Some(i) if i > MAX_LINE => Err(FrameError("line too long".into())),
        Some(i) => match rest.get(i + 1) {
            None => Ok(None),
            Some(b'\n') => Ok(Some(from + i)),
            Some(_) => Err(FrameError("CR not followed by LF".into())),
        },
        None if rest.len() > MAX_LINE => Err(FrameError("line too long".into())),
        None => Ok(None),
    }
}

/// A `$`/`*` length: -1 (null) or more.
fn length(line: &[u8]) -> Result<i64, FrameError> {
    let text = std::str::from_utf8(line).map_err(|_| FrameError("length is not ASCII".into()))?;
    match text.parse::<i64>() {
        Ok(n) if n >= -1 && n <= MAX_BULK as i64 => Ok(n),
        _ => Err(FrameError(format!("invalid length {text:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    const REPLIES: &[&[u8]] = &[
        b"+OK\r\n",
        b"-ERR wrong\r\n",
        b"-NOSCRIPT No matching script\r\n",
        b":1\r\n",
        b":-42\r\n",
        b"$-1\r\n",
        b"$0\r\n\r\n",
        b"$5\r\nhe\r\no\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"*2\r\n$3\r\nfoo\r\n:7\r\n",
        b"*2\r\n*1\r\n+a\r\n*2\r\n$-1\r\n-E x\r\n",
    ];

    #[test]
    fn frames_each_reply_and_every_prefix_is_incomplete() {
        for reply in REPLIES {
            assert_eq!(frame(reply), Ok(Some(reply.len())), "{reply:?}");
            for cut in 0..reply.len() {
                assert_eq!(frame(&reply[..cut]), Ok(None), "{reply:?} cut at {cut}");
            }
            let parsed = redis::parse_redis_value(reply).unwrap();
            if let Some(simple) = simple_value(reply) {
                assert_eq!(simple, parsed, "{reply:?}");
            }
        }
    }

    #[test]
    fn frames_a_pipeline_one_reply_at_a_time() {
        let all: Vec<u8> = REPLIES.concat();
        let mut at = 0;
        let mut n = 0;
        while at < all.len() {
            let len = frame(&all[at..]).unwrap().expect("complete");
            assert_eq!(&all[at..at + len], REPLIES[n]);
            at += len;
            n += 1;
        }
        assert_eq!(n, REPLIES.len());
    }

    #[test]
    fn rejects_what_is_not_resp() {
        for bad in [
            &b"?x\r\n"[..],
            b"$abc\r\n",
            b"$-2\r\n",
            b"*-5\r\n",
            b"$3\r\nabcd\r\n",
            b"+OK\rX",
        ] {
            assert!(frame(bad).is_err(), "{bad:?}");
        }
        let long = vec![b'+'; MAX_LINE + 10];
        assert!(frame(&long).is_err());
    }

    /// A small deterministic fuzz: random nested values, encoded, must frame
    /// to exactly their length (whole, and when cut anywhere before the
    /// end), and parse back to the same value; random bytes never panic.
    #[test]
    fn fuzz_random_values_and_bytes() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        fn encode(v: &Value, out: &mut Vec<u8>) {
            match v {
                Value::Nil => out.extend_from_slice(b"$-1\r\n"),
                Value::Int(i) => out.extend_from_slice(format!(":{i}\r\n").as_bytes()),
                Value::BulkString(b) => {
                    out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
                    out.extend_from_slice(b);
                    out.extend_from_slice(b"\r\n");
                }
                Value::Array(items) => {
                    out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
                    for item in items {
                        encode(item, out);
                    }
                }
                _ => unreachable!(),
            }
        }
        fn make(next: &mut dyn FnMut() -> u64, depth: u32) -> Value {
            match next() % if depth > 3 { 3 } else { 4 } {
                0 => Value::Nil,
                1 => Value::Int(next() as i64),
                2 => Value::BulkString((0..next() % 40).map(|_| next() as u8).collect()),
                _ => Value::Array((0..next() % 5).map(|_| make(next, depth + 1)).collect()),
            }
        }
        for _ in 0..2000 {
            let value = make(&mut next, 0);
            let mut bytes = Vec::new();
            encode(&value, &mut bytes);
            assert_eq!(frame(&bytes), Ok(Some(bytes.len())));
            let cut = (next() as usize) % bytes.len();
            assert_eq!(frame(&bytes[..cut]), Ok(None));
            assert_eq!(redis::parse_redis_value(&bytes).unwrap(), value);
            if let Some(simple) = simple_value(&bytes) {
                assert_eq!(simple, value);
            }
            let noise: Vec<u8> = (0..next() % 64).map(|_| next() as u8).collect();
            let _ = frame(&noise);
        }
    }
}
