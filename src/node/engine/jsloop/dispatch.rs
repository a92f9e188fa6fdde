//! Reply dispatch: the replies read so far, framed
//! (`crate::transport::resp`) and parsed (`redis::parse_redis_value`) in
//! order, each matched to the slot of the command it answers.

use redis::Value;

use super::pending::{Queue, Reply};
use super::transport::{READ_CHUNK, SHRINK_ABOVE};
use crate::transport::resp;

/// What one read's complete replies came to.
pub(super) struct Dispatched {
    /// Replies for their callers, to be sent once the connection is no
    /// longer borrowed.
    pub(super) delivered: Vec<(Reply, Value)>,
    /// An AUTH/SELECT was refused: why.
    pub(super) handshake_error: Option<String>,
    /// The stream is broken (a malformed reply, or one nobody asked for).
    pub(super) bad: Option<String>,
}

/// Takes the complete replies at the front of `input` and matches them to
/// `queue`'s slots. Replies that arrived before a malformed one are still
/// delivered.
pub(super) fn dispatch(input: &mut Vec<u8>, queue: &mut Queue) -> Dispatched {
    let mut replies = Vec::new();
    let mut at = 0;
    let mut bad = None;
    loop {
        match resp::frame(&input[at..]) {
            Ok(Some(n)) => {
                let reply = &input[at..at + n];
                let parsed = match resp::simple_value(reply) {
                    Some(v) => Ok(v),
                    None => redis::parse_redis_value(reply),
                };
                match parsed {
                    Ok(v) => replies.push(v),
                    Err(e) => {
                        bad = Some(e.to_string());
                        break;
                    }
                }
                at += n;
            }
            Ok(None) => break,
            Err(e) => {
                bad = Some(e.0);
                break;
            }
        }
    }
    input.drain(..at);
    if input.is_empty() && input.capacity() > SHRINK_ABOVE {
        input.shrink_to(READ_CHUNK);
    }
    let mut handshake_error = None;
    let mut delivered = Vec::with_capacity(replies.len());
    for value in replies {
        let Some(p) = queue.pop() else {
            bad = Some("a reply nobody asked for".into());
            break;
        };
        if p.handshake {
            if let Value::ServerError(e) = &value {
                let detail = e.details().unwrap_or("");
                handshake_error = Some(format!("AUTH/SELECT refused: {} {detail}", e.code()));
            }
        } else if let Some(tx) = p.tx {
            delivered.push((tx, value));
        }
    }
    Dispatched {
        delivered,
        handshake_error,
        bad,
    }
}
