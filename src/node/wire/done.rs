//! Finished operations as JavaScript's `onDone(codes, values)` receives
//! them, the same for both engines. Each code is `id << 2 | outcome` (an
//! [`Outcome`]); a `Failed` or `Value` outcome takes the next item of
//! `values`: an `Error` with its `code` as a field (`ERR_REDIS_TIMEOUT`,
//! …), or the operation's value as an object or number. The packing is
//! written here and read in lib/native/bridge.js (and a packed Redlock
//! grant in lib/native/wire.js `unpackGrant`), nowhere else.

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use crate::error::{Error as CoreError, Result};
use crate::locks::fanout::{self, majority, Report, Step};
use crate::node::wire::error::js_error;

/// How an operation ended; the binding exports the table for
/// lib/native/wire.js.
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Not acquired, not ours, not held.
    No = 0,
    Yes = 1,
    /// A real failure: its `Error` is the next value.
    Failed = 2,
    /// Yes, with a value: the next value.
    Value = 3,
}

/// How many low bits of a code the outcome takes (the rest is the id).
const OUTCOME_BITS: u32 = 2;

/// An operation's answer.
pub(crate) enum Reply {
    No,
    Yes,
    With(Value),
}

/// A grant and the attempts it took (a number for JavaScript), or not
/// acquired.
impl From<Option<u64>> for Reply {
    fn from(attempts: Option<u64>) -> Reply {
        match attempts {
            Some(n) => Reply::With(Value::Attempts(n)),
            None => Reply::No,
        }
    }
}

impl From<bool> for Reply {
    fn from(yes: bool) -> Reply {
        if yes {
            Reply::Yes
        } else {
            Reply::No
        }
    }
}

/// What an operation answers beyond yes or no.
pub enum Value {
    /// A token lock's grant: its fencing token (`fencing: true`; a bigint
    /// for JavaScript), how long ago the winning attempt was sent and how
    /// many attempts it took.
    Grant {
        fencing: Option<u64>,
        age_us: u64,
        attempts: u64,
    },
    /// A grant that says only how many attempts it took (a number).
    Attempts(u64),
    /// An extend: how long ago its command was sent (µs).
    Age(u64),
    /// What `inspect()` found.
    Inspected(Inspected),
    /// A Redlock operation's report.
    Report(QuorumReport),
    /// A node-redlock grant that every server voted for: all its face reads.
    Granted(QuorumGrant),
    /// A Redisson unlock that released the last hold.
    Released,
    /// A count (permits, a latch's count): a number for JavaScript.
    Count(i64),
    /// `query()`: each name with requests, its held and pending ones.
    WebLocks(Vec<WebLocksName>),
}

/// One name in a Web Locks `query()`: the name's tag (its UTF-16 code
/// units, little-endian, in hex: JavaScript turns it back into the name)
/// and its requests, each in order.
#[napi(object)]
pub struct WebLocksName {
    pub tag: String,
    pub held: Vec<WebLocksInfo>,
    pub pending: Vec<WebLocksInfo>,
}

/// One request in a `query()`: `mode` ('exclusive' or 'shared') and the
/// `clientId` of its manager.
#[napi(object)]
pub struct WebLocksInfo {
    pub mode: String,
    pub client_id: String,
}

/// `inspect(client, key)`'s answer: the key's PTTL as Redis gives it (-2:
/// no key, -1: no TTL), its owner token and its fencing counter (null
/// when there is none).
#[napi(object)]
pub struct Inspected {
    pub pttl: f64,
    pub owner: Option<String>,
    pub fencing: Option<BigInt>,
}

/// What every server of a Redlock did, and the verdict (src/locks/quorum.rs).
#[napi(object)]
pub struct QuorumReport {
    pub granted: bool,
    /// Validity left at the end (ms; TTL − time spent − drift; may be negative).
    pub validity_ms: f64,
    pub attempts: f64,
    /// How many servers are a majority (what a verdict needs).
    pub quorum: u32,
    /// One per server, in the order JavaScript gave them.
    pub servers: Vec<ServerVote>,
    /// node-redlock: every attempt's votes, in order (empty for Redlock).
    pub rounds: Vec<Vec<ServerVote>>,
    /// node-redlock: every server's failure in order (each attempt's, then
    /// its give-back's), for redlock 4's `clientError` (empty for Redlock).
    pub failures: Vec<ServerFailure>,
    /// How long ago the reported attempt started (ms, when the report was made).
    pub age_ms: f64,
}

/// A grant every server voted for, without the per-server votes (a
/// smaller answer for the common case): one number when it fits (see
/// [`GRANT_SPAN`]), else this object.
#[napi(object)]
pub struct QuorumGrant {
    pub granted: bool,
    pub validity_ms: f64,
    pub attempts: f64,
}

/// A [`QuorumGrant`] whose validity is under 2^31 ms and whose attempts
/// are under this reaches JavaScript as the number `validityMs *
/// GRANT_SPAN + attempts` (lib/native/wire.js `unpackGrant`): an object
/// made through napi (its property names interned on every call) took
/// 4.4 % of the JavaScript thread's samples for the redlock 4 face at 16
/// workers (benchmark/NOTES.md §29).
#[napi]
pub const GRANT_SPAN: u32 = 1 << 21;

impl QuorumGrant {
    /// The grant as one number, when it fits exactly.
    fn packed(&self) -> Option<f64> {
        let (v, a) = (self.validity_ms, self.attempts);
        let whole = v.fract() == 0.0 && a.fract() == 0.0;
        let fits = (0.0..2_147_483_648.0).contains(&v) && a >= 0.0 && a < f64::from(GRANT_SPAN);
        (self.granted && whole && fits).then(|| v * f64::from(GRANT_SPAN) + a)
    }
}

impl QuorumReport {
    /// `report` as JavaScript reads it (lib/redislock/quorum.js,
    /// lib/redlock/).
    pub(crate) fn of(report: &Report, step: Step) -> QuorumReport {
        let votes = |outcomes: &[fanout::Outcome]| {
            outcomes
                .iter()
                .map(|o| ServerVote {
                    outcome: o.name(step).to_string(),
                    error: o.message().map(str::to_string),
                })
                .collect::<Vec<_>>()
        };
        QuorumReport {
            granted: report.granted,
            validity_ms: report.validity_ms as f64,
            attempts: report.attempts as f64,
            quorum: u32::try_from(majority(report.outcomes.len())).unwrap_or(u32::MAX),
            servers: votes(&report.outcomes),
            rounds: report.rounds.iter().map(|r| votes(r)).collect(),
            failures: report
                .failures
                .iter()
                .map(|(i, o)| ServerFailure {
                    server: u32::try_from(*i).unwrap_or(u32::MAX),
                    outcome: o.name(step).to_string(),
                    error: o.message().map(str::to_string),
                })
                .collect(),
            age_ms: report.started.elapsed().as_secs_f64() * 1000.0,
        }
    }
}

/// One server's part in a Redlock operation.
#[napi(object)]
pub struct ServerVote {
    /// `acquired`, `held`, `released`, `extended`, `not-ours`, `timeout`,
    /// `unreachable`, `error` or `unheard` (an acquire settled by a
    /// majority before this server answered).
    pub outcome: String,
    pub error: Option<String>,
}

/// One server's failure (`timeout`, `unreachable` or `error`) in a report.
#[napi(object)]
pub struct ServerFailure {
    /// Its index, in the order JavaScript gave the servers.
    pub server: u32,
    pub outcome: String,
    pub error: Option<String>,
}

/// The grant as JavaScript sees it.
#[napi(object)]
pub struct Granted {
    pub fencing: Option<BigInt>,
    pub age_us: f64,
    pub attempts: f64,
}

/// One item of `values`.
pub enum Item {
    Failed(CoreError),
    Value(Value),
}

impl ToNapiValue for Item {
    // `unsafe` because the trait says so: napi-rs calls it with a live `env`
    // on that environment's thread.
    // SAFETY: this only forwards `env` to conversions with the same contract.
    unsafe fn to_napi_value(env: sys::napi_env, item: Self) -> napi::Result<sys::napi_value> {
        // SAFETY: called by napi-rs with the environment it converts for, on
        // its thread (both engines deliver on the JavaScript thread).
        unsafe {
            match item {
                Item::Failed(err) => Ok(js_error(env, &err)),
                Item::Value(Value::Grant {
                    fencing,
                    age_us,
                    attempts,
                }) => Granted::to_napi_value(
                    env,
                    Granted {
                        fencing: fencing.map(BigInt::from),
                        age_us: age_us as f64,
                        attempts: attempts as f64,
                    },
                ),
                Item::Value(Value::Attempts(n)) => f64::to_napi_value(env, n as f64),
                Item::Value(Value::Age(us)) => f64::to_napi_value(env, us as f64),
                Item::Value(Value::Inspected(i)) => Inspected::to_napi_value(env, i),
                Item::Value(Value::Report(r)) => QuorumReport::to_napi_value(env, r),
                Item::Value(Value::Granted(g)) => match g.packed() {
                    Some(n) => f64::to_napi_value(env, n),
                    None => QuorumGrant::to_napi_value(env, g),
                },
                Item::Value(Value::Released) => bool::to_napi_value(env, true),
                Item::Value(Value::Count(n)) => f64::to_napi_value(env, n as f64),
                Item::Value(Value::WebLocks(names)) => {
                    Vec::<WebLocksName>::to_napi_value(env, names)
                }
            }
        }
    }
}

/// The arguments of `onDone`.
pub(crate) type DoneArgs = FnArgs<(Vec<u32>, Vec<Item>)>;

/// A batch of finished operations.
#[derive(Default)]
pub(crate) struct Done {
    pub(crate) codes: Vec<u32>,
    pub(crate) values: Vec<Item>,
}

impl Done {
    /// Adds operation `id`'s outcome.
    pub(crate) fn record<T: Into<Reply>>(&mut self, id: u32, outcome: Result<T>) {
        let code = match outcome.map(Into::into) {
            Ok(Reply::No) => Outcome::No,
            Ok(Reply::Yes) => Outcome::Yes,
            Ok(Reply::With(value)) => {
                self.values.push(Item::Value(value));
                Outcome::Value
            }
            Err(err) => {
                self.values.push(Item::Failed(err));
                Outcome::Failed
            }
        };
        self.codes.push(id << OUTCOME_BITS | code as u32);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }
}

/// The outcome of an operation that panicked (caught): it must still settle.
pub(crate) fn panicked() -> CoreError {
    CoreError::Internal(
        "redislock-rs hit an internal error (a Rust panic, caught); please report it".into(),
    )
}

/// `op` with a panic inside it caught as [`panicked`]'s error, so its
/// promise still settles (both engines run every operation through it). A
/// combinator, not an async block: a block would hold `op` twice (its
/// capture and its await), and the engines copy the whole future when they
/// spawn it (benchmark/NOTES.md §28).
pub(crate) fn settled<T, F>(op: F) -> impl std::future::Future<Output = Result<T>>
where
    F: std::future::Future<Output = Result<T>>,
{
    use futures_util::FutureExt;
    std::panic::AssertUnwindSafe(op)
        .catch_unwind()
        .map(|caught| caught.unwrap_or_else(|_| Err(panicked())))
}
