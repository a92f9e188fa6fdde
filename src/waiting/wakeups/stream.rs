//! node-redisson's event stream, as the wake-ups read it (`XREAD` from the
//! last id, `XREVRANGE` for where to start): the replies' parsing, RESP2
//! and RESP3 alike.

use std::time::Duration;

use redis::Value;

/// node-redisson's event stream (`eventAdapter: 'streams'`), read by the
/// stream reader.
pub const EVENTS_STREAM: &str = "redisson:events";

/// How long one stream read blocks in Redis.
pub(super) const READ_BLOCK: Duration = Duration::from_millis(5000);

/// The ids of a stream range reply (`XREVRANGE`).
pub(super) fn entry_ids(v: &Value) -> Vec<String> {
    let Value::Array(entries) = v else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| match e {
            Value::Array(parts) => parts.first().and_then(text),
            _ => None,
        })
        .collect()
}

/// `(id, channel)` for each entry of an `XREAD` reply, in order: each
/// node-redisson entry is `<channel> <message>`.
pub(super) fn stream_entries(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let streams: Vec<&Value> = match v {
        Value::Array(s) => s.iter().collect(),
        Value::Map(m) => m.iter().map(|(_, v)| v).collect(),
        _ => return out,
    };
    for s in streams {
        // RESP2: [name, entries]; RESP3 map values are the entries.
        let entries = match s {
            Value::Array(pair) if pair.len() == 2 && text(&pair[0]).is_some() => &pair[1],
            other => other,
        };
        let Value::Array(entries) = entries else {
            continue;
        };
        for e in entries {
            let Value::Array(parts) = e else { continue };
            let (Some(id), Some(Value::Array(fields))) =
                (parts.first().and_then(text), parts.get(1))
            else {
                continue;
            };
            if let Some(channel) = fields.first().and_then(text) {
                out.push((id, channel));
            }
        }
    }
    out
}

pub(super) fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waiting::wakeups::EVENTS_STREAM;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn reads_node_redisson_stream_entries() {
        let entry = |id: &str, ch: &str| {
            Value::Array(vec![bulk(id), Value::Array(vec![bulk(ch), bulk("0")])])
        };
        let reply = Value::Array(vec![Value::Array(vec![
            bulk(EVENTS_STREAM),
            Value::Array(vec![
                entry("1-0", "redisson_lock__channel:{a}"),
                entry("2-0", "x"),
            ]),
        ])]);
        assert_eq!(
            stream_entries(&reply),
            vec![
                ("1-0".to_string(), "redisson_lock__channel:{a}".to_string()),
                ("2-0".to_string(), "x".to_string())
            ]
        );
        assert!(stream_entries(&Value::Nil).is_empty());
        let range = Value::Array(vec![entry("7-1", "c")]);
        assert_eq!(entry_ids(&range), vec!["7-1".to_string()]);
    }
}
