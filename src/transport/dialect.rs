//! What a server can do for a token lock without Lua, learned once per
//! server. Valkey 9.0 and later have `DELIFEQ key value` (delete only if
//! the key holds that value) and `SET key value IFEQ value …` (8.1+: set
//! only if it holds it), so a token lock's release, extend and renewal are
//! one command each, with no script to load, no interpreter to pay and no
//! `@scripting` permission to need. Everywhere else they stay scripts.
//!
//! Learned from `COMMAND INFO DELIFEQ`, never from a version string (a
//! fork or a module may have the command, a build may lack it), the first
//! time a lock operation meets the server. A server without it is also
//! asked once whether this user may run scripts (`SCRIPT EXISTS`, which
//! ACL classes with `EVALSHA` under `@scripting`), so that a user who may
//! not is told so by the first acquire rather than by a release that
//! leaves the lock held until its lease ends. A server that later answers
//! a compare command with "unknown command" (a failover or restart onto
//! an older server) is asked again.
//!
//! Redis 8.4's `DELEX key IFEQ value` is left out: no Redis 8.4 server can
//! be installed where this is tested, so a Redis 8.4 keeps the scripts.
//!
//! `REDISLOCK_RS_LUA_FREE=0` in the environment keeps the scripts on every
//! server (for comparing the two paths, as the benchmark does).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::Value;

use crate::error::{Error, Result};

/// How a server does a token lock's compare-and-act steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaks {
    /// By Lua scripts (`EVALSHA`).
    Scripts,
    /// By `SET … IFEQ` and `DELIFEQ` (Valkey 9.0+).
    CompareCommands,
}

const UNKNOWN: u8 = 0;
const SCRIPTS: u8 = 1;
const COMMANDS: u8 = 2;
/// No compare commands, and this user may not run scripts.
const FORBIDDEN: u8 = 3;

/// Each server's [`Dialect`] by its index, for an operation on several
/// independent servers (a Redlock quorum).
pub type Dialects<'a, 'd> = &'a (dyn Fn(usize) -> &'d Dialect + Sync);

/// One server's [`Speaks`], learned on first use.
#[derive(Debug, Default)]
pub struct Dialect {
    state: AtomicU8,
}

static SCRIPTS_ONLY: LazyLock<bool> =
    LazyLock::new(|| std::env::var("REDISLOCK_RS_LUA_FREE").is_ok_and(|v| v == "0"));

/// The error for a user who may not run scripts on a server that has no
/// compare commands: nothing this library does could release the lock.
pub fn no_scripting() -> Error {
    Error::Redis(
        "This Redis user may not run scripts (NOPERM for the @scripting commands EVAL and \
         EVALSHA), and this server has no DELIFEQ to lock without them: grant the user \
         +@scripting, or use Valkey 9.0 or later (SET … IFEQ and DELIFEQ)"
            .into(),
    )
}

impl Dialect {
    pub const fn new() -> Dialect {
        Dialect {
            state: AtomicU8::new(UNKNOWN),
        }
    }

    /// A dialect that is scripts, without asking (where no server's is at
    /// hand).
    pub const fn scripts() -> Dialect {
        Dialect {
            state: AtomicU8::new(SCRIPTS),
        }
    }

    /// What the server speaks, known without asking (None: not learned yet).
    pub fn known(&self) -> Option<Speaks> {
        match self.state.load(Ordering::Acquire) {
            COMMANDS => Some(Speaks::CompareCommands),
            SCRIPTS | FORBIDDEN => Some(Speaks::Scripts),
            _ => None,
        }
    }

    /// What the server speaks, asking it over `conn` the first time.
    /// An error only when this user may run no script there and the
    /// server has no compare commands ([`no_scripting`]). A question the
    /// connection could not carry is asked again next time (scripts
    /// meanwhile); one the server refused (no `COMMAND` for this user, a
    /// server without it) counts as no compare commands.
    pub async fn of<C: ConnectionLike>(&self, conn: &mut C) -> Result<Speaks> {
        match self.state.load(Ordering::Acquire) {
            COMMANDS => return Ok(Speaks::CompareCommands),
            SCRIPTS => return Ok(Speaks::Scripts),
            FORBIDDEN => return Err(no_scripting()),
            _ => {}
        }
        if *SCRIPTS_ONLY {
            self.state.store(SCRIPTS, Ordering::Release);
            return Ok(Speaks::Scripts);
        }
        let info: redis::RedisResult<Value> = redis::cmd("COMMAND")
            .arg("INFO")
            .arg("DELIFEQ")
            .query_async(conn)
            .await;
        let has = match info {
            Ok(Value::Array(items)) => items.first().is_some_and(|v| *v != Value::Nil),
            Ok(_) => false,
            Err(e) if answered(&e) => false,
            Err(_) => return Ok(Speaks::Scripts),
        };
        if has {
            self.state.store(COMMANDS, Ordering::Release);
            return Ok(Speaks::CompareCommands);
        }
        // May this user run scripts? SCRIPT EXISTS is refused exactly when
        // EVALSHA would be (both @scripting), and changes nothing.
        let probe: redis::RedisResult<Value> = redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg("0000000000000000000000000000000000000000")
            .query_async(conn)
            .await;
        match probe {
            Err(e) if e.code() == Some("NOPERM") => {
                self.state.store(FORBIDDEN, Ordering::Release);
                Err(no_scripting())
            }
            Err(e) if !answered(&e) => Ok(Speaks::Scripts),
            _ => {
                self.state.store(SCRIPTS, Ordering::Release);
                Ok(Speaks::Scripts)
            }
        }
    }

    /// The server answered a compare command "unknown command": it is not
    /// the server this was learned from. Ask again next time.
    pub fn forget(&self) {
        self.state.store(UNKNOWN, Ordering::Release);
    }
}

/// Whether `e` is the server's answer (an error reply), not a failure to
/// get one.
fn answered(e: &redis::RedisError) -> bool {
    !(e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_io_error())
}

/// Whether `e` says the server does not speak a compare command: no such
/// command (`DELIFEQ`), or a syntax error for a well-formed `SET … IFEQ`
/// (a server older than Valkey 8.1).
pub fn unknown_command(e: &redis::RedisError) -> bool {
    e.code() == Some("ERR")
        && e.detail()
            .is_some_and(|d| d.starts_with("unknown command") || d.starts_with("syntax error"))
}
