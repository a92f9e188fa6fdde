//! The Web Locks queue (issue 36): the W3C Web Locks API's lock request
//! queue and held lock set for one name, kept on Redis so that every
//! process of a fleet shares it. Requests for a name are granted in the
//! order they were made, fleet-wide; a shared request is granted with other
//! shared ones but waits behind an exclusive request queued before it, as
//! the spec's "process the lock request queue" does
//! (https://w3c.github.io/web-locks/).
//!
//! One name's data, all under one hash tag (the name's bytes in hex), so
//! every step is one script on one slot (Redis Cluster too), and nothing is
//! left once the name has no request:
//! - `…:q` pending requests, a sorted set scored by a sequence number
//!   (`…:n`, dropped when the name is idle), so FIFO holds across processes;
//! - `…:e` each pending request's expiry (its waiter keeps it alive by
//!   polling), so a dead waiter blocks the queue no longer than its lease;
//! - `…:h` held requests scored by their lease's end (renewed by the
//!   holder's keeper), so a dead holder frees the name after its lease;
//! - `…:m` each request's mode, lease and client id;
//! - `…:x` the exclusive holder, if any.
//!
//! Every step first drops what has expired (by the server's clock, `TIME`)
//! and then grants from the head of the queue while the head is grantable,
//! and announces each grant of someone else's request on that request's
//! own channel, so its waiter (and no other) polls at once. This file is napi-free: it
//! knows the data and the steps; the face, the wait and the keeper come
//! from the layers above.

use std::sync::{Arc, LazyLock};

use futures_util::future::BoxFuture;
use redis::aio::ConnectionLike;
use redis::Value;

use crate::error::{Error, Result};
use crate::locks::renewal::{Lost, Renewal};
use crate::transport::connection::SharedConnection;
use crate::transport::lua::Lua;
use crate::waiting::timer::wall_ms;

/// What every step's script starts with: the keys, the server's time in
/// ms, and the queue's rules.
const PRELUDE: &str = r#"
local q, h, e, m, n, x = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local channel, publish, self = ARGV[1], ARGV[2], ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function meta(id)
  local v = redis.call('HGET', m, id)
  if not v then return nil end
  local mode, lease = string.match(v, '^(%a)|(%d+)|')
  return mode, tonumber(lease)
end
local function drop_held(id)
  redis.call('ZREM', h, id)
  if redis.call('GET', x) == id then redis.call('DEL', x) end
  redis.call('HDEL', m, id)
end
local function drop_pending(id)
  redis.call('ZREM', q, id)
  redis.call('ZREM', e, id)
  redis.call('HDEL', m, id)
end
local function purge()
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', h, '-inf', now)) do drop_held(id) end
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', e, '-inf', now)) do drop_pending(id) end
end
local function take(id, mode, lease)
  redis.call('ZADD', h, now + lease, id)
  if mode == 'x' then redis.call('SET', x, id) end
end
local function grant(id, mode, lease)
  redis.call('ZREM', q, id)
  redis.call('ZREM', e, id)
  take(id, mode, lease)
end
local function compatible(mode)
  if mode == 'x' then return redis.call('ZCARD', h) == 0 end
  return redis.call('EXISTS', x) == 0
end
local others = {}
local function process()
  while true do
    local head = redis.call('ZRANGE', q, 0, 0)[1]
    if not head then break end
    local mode, lease = meta(head)
    if not mode then
      drop_pending(head)
    elseif compatible(mode) then
      grant(head, mode, lease)
      if head ~= self then table.insert(others, head) end
    else
      break
    end
  end
  if redis.call('ZCARD', q) == 0 and redis.call('ZCARD', h) == 0 then redis.call('DEL', n) end
end
local function status(id)
  if redis.call('ZSCORE', h, id) then return 1 end
  if redis.call('ZSCORE', q, id) then return 0 end
  return -1
end
local function done(reply)
  for _, id in ipairs(others) do redis.call(publish, channel .. id, '1') end
  return reply
end
"#;

/// A request: ARGV[4] mode (`x`/`s`), ARGV[5] lease ms, ARGV[6] client id,
/// ARGV[7] how (`q` queue, `a` if available, `s` steal), ARGV[8] the
/// prefix's steal channel (a steal that took the name from its holders
/// announces there, by `PUBLISH`: their processes renew at once and learn
/// it). 1 held, 0 queued, -1 not granted (if available: nothing written).
const REQUEST: &str = r#"
purge()
local mode, lease, client, how = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7]
local record = mode .. '|' .. ARGV[5] .. '|' .. client
if how == 's' then
  local stolen = redis.call('ZRANGE', h, 0, -1)
  for _, old in ipairs(stolen) do drop_held(old) end
  if #stolen > 0 then redis.call('PUBLISH', ARGV[8], '1') end
  redis.call('HSET', m, self, record)
  take(self, mode, lease)
  process()
  return done(1)
end
process()
-- Nothing queued and nothing in the way: granted now, as queuing it and
-- processing the queue would (fewer steps on the uncontended path).
if redis.call('ZCARD', q) == 0 and compatible(mode) then
  redis.call('HSET', m, self, record)
  take(self, mode, lease)
  return done(1)
end
if how == 'a' then return done(-1) end
redis.call('ZADD', q, redis.call('INCR', n), self)
redis.call('ZADD', e, now + lease, self)
redis.call('HSET', m, self, record)
process()
return done(status(self))
"#;

/// A waiter's poll: ARGV[4] its lease ms. 1 held (granted meanwhile), 0
/// still queued (kept alive for another lease), -1 gone.
const POLL: &str = r#"
purge()
process()
local s = status(self)
if s == 0 then redis.call('ZADD', e, now + tonumber(ARGV[4]), self) end
return done(s)
"#;

/// A holder's renewal: ARGV[4] its lease ms. 1 renewed, 0 not held (lost).
const RENEW: &str = r#"
local until_ms = redis.call('ZSCORE', h, self)
if until_ms and tonumber(until_ms) > now then
  redis.call('ZADD', h, 'XX', now + tonumber(ARGV[4]), self)
  return 1
end
purge()
process()
return done(0)
"#;

/// A release: 1 released, 0 not held (lost before).
const RELEASE: &str = r#"
purge()
local had = redis.call('ZSCORE', h, self)
if had then drop_held(self) end
process()
if had then return done(1) end
return done(0)
"#;

/// An abort of a queued request: 1 taken out of the queue, 2 it was
/// granted meanwhile (the caller releases it), 0 gone.
const ABORT: &str = r#"
purge()
if redis.call('ZSCORE', q, self) then
  drop_pending(self)
  process()
  return done(1)
end
process()
if status(self) == 1 then return done(2) end
return done(0)
"#;

/// The name's held and pending requests, in order: two arrays of `id`,
/// `mode|lease|client` pairs.
const SNAPSHOT: &str = r#"
purge()
process()
local function list(ids)
  local out = {}
  for _, id in ipairs(ids) do
    table.insert(out, id)
    table.insert(out, redis.call('HGET', m, id) or '')
  end
  return out
end
return done({ list(redis.call('ZRANGE', h, 0, -1)), list(redis.call('ZRANGE', q, 0, -1)) })
"#;

struct Scripts {
    request: Lua,
    poll: Lua,
    renew: Lua,
    release: Lua,
    abort: Lua,
    snapshot: Lua,
}

static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| {
    let with = |body: &str| Lua::new(format!("{PRELUDE}{body}"));
    Scripts {
        request: with(REQUEST),
        poll: with(POLL),
        renew: with(RENEW),
        release: with(RELEASE),
        abort: with(ABORT),
        snapshot: with(SNAPSHOT),
    }
});

/// A request's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Shared,
    Exclusive,
}

impl Mode {
    fn code(self) -> &'static str {
        match self {
            Mode::Shared => "s",
            Mode::Exclusive => "x",
        }
    }
}

/// How a request is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// Queued, granted in turn.
    Queue,
    /// `ifAvailable`: granted now or not at all (nothing is queued).
    IfAvailable,
    /// `steal`: every holder of the name loses it, and this is granted now.
    Steal,
}

impl How {
    fn code(self) -> &'static str {
        match self {
            How::Queue => "q",
            How::IfAvailable => "a",
            How::Steal => "s",
        }
    }
}

/// Where a request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Held,
    Pending,
    /// Not granted (`ifAvailable`), or no longer there (expired, stolen).
    Gone,
}

fn status(n: i64) -> Status {
    match n {
        1 => Status::Held,
        0 => Status::Pending,
        _ => Status::Gone,
    }
}

/// How an abort of a queued request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aborted {
    /// Taken out of the queue.
    Removed,
    /// It had been granted meanwhile: the caller must release it.
    Held,
    /// It was no longer there.
    Gone,
}

/// One request in a [`Snapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    pub id: String,
    pub mode: Mode,
    pub client_id: String,
}

/// A name's held and pending requests, each in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub held: Vec<Info>,
    pub pending: Vec<Info>,
}

/// One name's keys and channel under a prefix.
#[derive(Clone, Debug)]
pub struct Queue {
    keys: [String; 6],
    channel: String,
    tag: String,
    /// The prefix's steal channel (see [`steals_channel`]).
    steals: String,
}

impl Queue {
    /// The queue of `name` (its bytes, as the face encodes the name: any
    /// string, lone surrogates and NUL included, must come back unchanged)
    /// under `prefix`. Every key and the channel share the hash tag of the
    /// name's bytes in hex.
    pub fn new(prefix: &str, name: &[u8]) -> Queue {
        let mut tag = String::with_capacity(name.len() * 2);
        for b in name {
            tag.push_str(&format!("{b:02x}"));
        }
        Queue::tagged(prefix, &tag)
    }

    /// The queue whose name's bytes are `tag` in hex (lower case, as
    /// [`index`] lists them and the face sends them).
    pub fn of_tag(prefix: &str, tag: &str) -> Result<Queue> {
        let hex = tag.len().is_multiple_of(2)
            && tag.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hex {
            return Err(Error::InvalidArgument(
                "a Web Locks name tag must be lower-case hex of whole bytes".into(),
            ));
        }
        Ok(Queue::tagged(prefix, tag))
    }

    fn tagged(prefix: &str, tag: &str) -> Queue {
        let base = format!("{prefix}weblocks:{{{tag}}}");
        let key = |suffix: &str| format!("{base}:{suffix}");
        Queue {
            keys: [key("q"), key("h"), key("e"), key("m"), key("n"), key("x")],
            channel: key("granted:"),
            tag: tag.to_string(),
            steals: steals_channel(prefix),
        }
    }

    /// The name's bytes in hex.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The key of the held set (what the lease keeper names a hold by).
    pub fn held_key(&self) -> &str {
        &self.keys[1]
    }

    /// The channel a grant of request `id` made by another's step is
    /// announced on (in the name's hash slot).
    pub fn granted_channel(&self, id: &str) -> String {
        format!("{}{id}", self.channel)
    }

    async fn run<C: ConnectionLike>(
        &self,
        conn: &mut C,
        script: &Lua,
        publish: &str,
        id: &str,
        rest: &[&str],
    ) -> Result<Value> {
        let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        let mut args: Vec<&[u8]> = vec![self.channel.as_bytes(), publish.as_bytes(), id.as_bytes()];
        args.extend(rest.iter().map(|r| r.as_bytes()));
        Ok(script.run(conn, &keys, &args).await?)
    }

    /// One step for request `id` (checked) that answers a number.
    async fn step<C: ConnectionLike>(
        &self,
        conn: &mut C,
        script: &Lua,
        publish: &str,
        id: &str,
        rest: &[&str],
    ) -> Result<i64> {
        check_id(id)?;
        int(self.run(conn, script, publish, id, rest).await?)
    }
}

fn int(v: Value) -> Result<i64> {
    match v {
        Value::Int(n) => Ok(n),
        other => Err(Error::Redis(format!(
            "Unexpected reply from a Web Locks script: {other:?}"
        ))),
    }
}

fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(Error::InvalidArgument(
            "a request id must not be empty".into(),
        ));
    }
    Ok(())
}

/// Makes request `id` of `client_id` for the name, as `how` says, with
/// lease `lease_ms` (a held lock's, and a queued request's between its
/// waiter's polls). `publish`: `PUBLISH`, or `SPUBLISH` on a Redis Cluster
/// 7+.
#[allow(clippy::too_many_arguments)]
pub async fn request<C: ConnectionLike>(
    conn: &mut C,
    queue: &Queue,
    publish: &str,
    id: &str,
    mode: Mode,
    lease_ms: u64,
    client_id: &str,
    how: How,
) -> Result<Status> {
    if lease_ms == 0 {
        return Err(Error::InvalidArgument("a lease must be positive".into()));
    }
    let lease = lease_ms.to_string();
    let rest = [mode.code(), &lease, client_id, how.code(), &queue.steals];
    let n = queue
        .step(conn, &SCRIPTS.request, publish, id, &rest)
        .await?;
    Ok(status(n))
}

/// A waiter's poll of request `id`: granted meanwhile, still queued (kept
/// alive for another `lease_ms`), or gone.
pub async fn poll<C: ConnectionLike>(
    conn: &mut C,
    queue: &Queue,
    publish: &str,
    id: &str,
    lease_ms: u64,
) -> Result<Status> {
    let lease = lease_ms.to_string();
    let n = queue
        .step(conn, &SCRIPTS.poll, publish, id, &[&lease])
        .await?;
    Ok(status(n))
}

/// Renews held request `id` for `lease_ms`: `false` when it is no longer
/// held (expired, stolen).
pub async fn renew<C: ConnectionLike>(
    conn: &mut C,
    queue: &Queue,
    publish: &str,
    id: &str,
    lease_ms: u64,
) -> Result<bool> {
    let lease = lease_ms.to_string();
    let n = queue
        .step(conn, &SCRIPTS.renew, publish, id, &[&lease])
        .await?;
    Ok(n == 1)
}

/// Releases held request `id` (and grants whom that lets in): `false` when
/// it was no longer held.
pub async fn release<C: ConnectionLike>(
    conn: &mut C,
    queue: &Queue,
    publish: &str,
    id: &str,
) -> Result<bool> {
    let n = queue.step(conn, &SCRIPTS.release, publish, id, &[]).await?;
    Ok(n == 1)
}

/// Takes queued request `id` out of the queue (its signal aborted).
pub async fn abort<C: ConnectionLike>(
    conn: &mut C,
    queue: &Queue,
    publish: &str,
    id: &str,
) -> Result<Aborted> {
    let n = queue.step(conn, &SCRIPTS.abort, publish, id, &[]).await?;
    Ok(match n {
        1 => Aborted::Removed,
        2 => Aborted::Held,
        _ => Aborted::Gone,
    })
}

/// The name's held and pending requests, in order.
pub async fn snapshot<C: ConnectionLike>(
    conn: &mut C,
    queue: &Queue,
    publish: &str,
) -> Result<Snapshot> {
    let reply = queue
        .run(conn, &SCRIPTS.snapshot, publish, "-", &[])
        .await?;
    let Value::Array(parts) = reply else {
        return Err(Error::Redis(format!(
            "Unexpected reply to a Web Locks snapshot: {reply:?}"
        )));
    };
    let mut lists = parts.into_iter().map(infos);
    let held = lists.next().transpose()?.unwrap_or_default();
    let pending = lists.next().transpose()?.unwrap_or_default();
    Ok(Snapshot { held, pending })
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

fn infos(v: Value) -> Result<Vec<Info>> {
    let Value::Array(items) = v else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len() / 2);
    for pair in items.chunks(2) {
        let (Some(id), Some(record)) = (pair.first().and_then(text), pair.get(1).and_then(text))
        else {
            continue;
        };
        let mut fields = record.splitn(3, '|');
        let mode = match fields.next() {
            Some("x") => Mode::Exclusive,
            Some("s") => Mode::Shared,
            _ => continue,
        };
        let client_id = fields.nth(1).unwrap_or_default().to_string();
        out.push(Info {
            id,
            mode,
            client_id,
        });
    }
    Ok(out)
}

/// Where a `steal` under `prefix` that took a lock from its holders is
/// announced (classic pub/sub: on a Redis Cluster it reaches every node).
pub fn steals_channel(prefix: &str) -> String {
    format!("{prefix}weblocks:stolen")
}

/// What every held set's key under `prefix` starts with (the keeper's
/// holds of this prefix).
pub fn held_prefix(prefix: &str) -> String {
    format!("{prefix}weblocks:{{")
}

/// The lease keeper's family tag for a held Web Locks request.
pub const KEPT: &str = "weblocks";

/// A held request kept by the lease keeper while its callback runs:
/// renewed by [`renew`]; lost (`Taken`) when it is no longer held —
/// stolen, deleted, or expired.
pub struct Kept {
    pub server: Arc<SharedConnection>,
    pub queue: Queue,
    pub id: String,
    pub publish: &'static str,
}

impl Renewal for Kept {
    fn renew(&self, lease_ms: u64) -> BoxFuture<'_, Result<Option<Lost>>> {
        Box::pin(async move {
            let mut conn = self.server.get().await?;
            let renewed = renew(&mut conn, &self.queue, self.publish, &self.id, lease_ms).await?;
            Ok((!renewed).then_some(Lost::Taken))
        })
    }
}

/// The index of names with requests under `prefix` (for `query()`): a
/// sorted set of their tags, scored by when a request last touched them.
/// Not in any name's slot, so it is its own command.
fn index_key(prefix: &str) -> String {
    format!("{prefix}weblocks:names")
}

/// How long an index entry is kept after the last request that touched
/// it even when its name shows nothing (a request may be on its way).
const INDEX_GRACE_MS: u64 = 10_000;

/// Notes that `queue`'s name has a request (before the request is made).
pub async fn touch<C: ConnectionLike>(conn: &mut C, prefix: &str, queue: &Queue) -> Result<()> {
    let _: Value = redis::cmd("ZADD")
        .arg(index_key(prefix))
        .arg(wall_ms())
        .arg(&queue.tag)
        .query_async(conn)
        .await?;
    Ok(())
}

/// Every name under `prefix` with held or pending requests: its tag and
/// [`Snapshot`]. Names left with nothing and not touched for a while are
/// dropped from the index.
pub async fn index<C: ConnectionLike>(
    conn: &mut C,
    prefix: &str,
    publish: &str,
) -> Result<Vec<(String, Snapshot)>> {
    let key = index_key(prefix);
    let listed: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(&key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await?;
    let mut out = Vec::with_capacity(listed.len());
    let stale_before = wall_ms().saturating_sub(INDEX_GRACE_MS) as f64;
    for (tag, touched) in listed {
        let Ok(queue) = Queue::of_tag(prefix, &tag) else {
            continue;
        };
        let s = snapshot(conn, &queue, publish).await?;
        if s.held.is_empty() && s.pending.is_empty() {
            if touched < stale_before {
                let _: Value = redis::cmd("ZREM")
                    .arg(&key)
                    .arg(&tag)
                    .query_async(conn)
                    .await?;
            }
            continue;
        }
        out.push((tag, s));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_a_name_shares_one_hash_tag_and_any_bytes_make_a_name() {
        let q = Queue::new("app:", b"a\0}{\xff");
        for k in q.keys.iter().chain(std::iter::once(&q.channel)) {
            assert!(k.starts_with("app:weblocks:{61007d7bff}:"), "{k}");
        }
        let other = Queue::new("app:", b"a\0}{\xfe");
        assert_ne!(q.keys[0], other.keys[0]);
    }

    #[test]
    fn a_snapshot_reply_reads_back_in_order() {
        let pair = |id: &str, rec: &str| {
            vec![
                Value::BulkString(id.as_bytes().to_vec()),
                Value::BulkString(rec.as_bytes().to_vec()),
            ]
        };
        let held = Value::Array([pair("a", "x|100|c1")].concat());
        let infos = infos(held).expect("infos");
        assert_eq!(
            infos,
            vec![Info {
                id: "a".into(),
                mode: Mode::Exclusive,
                client_id: "c1".into()
            }]
        );
        let odd = Value::Array([pair("b", "s|5|with|bars"), pair("c", "?|1|z")].concat());
        let infos = super::infos(odd).expect("infos");
        assert_eq!(infos.len(), 1);
        assert_eq!(infos[0].client_id, "with|bars");
    }
}
