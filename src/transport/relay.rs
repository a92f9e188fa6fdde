//! Commands through someone else's client: for clients that have no server
//! we can reach (an in-memory mock such as ioredis-mock, a user's wrapper),
//! every command the lock logic decides to send is handed, as its
//! arguments, to a relay registered under an id (the napi layer's: it calls
//! the client's own methods on the JavaScript thread), and its reply comes
//! back as RESP bytes, parsed here like a server's. Slower than a socket of
//! our own, but the same commands, scripts and rules.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use redis::{Arg, Cmd, ErrorKind, RedisError, RedisResult, Value};
use tokio::sync::oneshot;

/// Hands one command (its arguments) to the client; the reply (RESP bytes,
/// or the client's failure) goes to the sender.
pub type Send = Arc<dyn Fn(Vec<Vec<u8>>, oneshot::Sender<Reply>) + std::marker::Send + Sync>;

/// A relayed command's outcome: the reply as RESP, or why the client
/// failed (not a Redis error reply: those come as RESP `-` lines).
pub type Reply = std::result::Result<Vec<u8>, String>;

static RELAYS: LazyLock<Mutex<HashMap<u32, Send>>> = LazyLock::new(Mutex::default);

fn relays() -> std::sync::MutexGuard<'static, HashMap<u32, Send>> {
    RELAYS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers relay `id`.
pub fn register(id: u32, send: Send) {
    relays().insert(id, send);
}

/// Forgets relay `id`: its commands fail from now on.
pub fn unregister(id: u32) {
    relays().remove(&id);
}

fn failed(why: String) -> RedisError {
    RedisError::from((ErrorKind::Io, "client relay failed", why))
}

/// A connection through relay `id`; each command waits `timeout` at most.
#[derive(Clone)]
pub struct Relayed {
    id: u32,
    timeout: Duration,
}

impl Relayed {
    pub fn new(id: u32, timeout: Duration) -> Relayed {
        Relayed { id, timeout }
    }

    /// Sends `cmd` through the client and waits for its reply.
    pub async fn send(&self, cmd: &Cmd) -> RedisResult<Value> {
        let args: Vec<Vec<u8>> = cmd
            .args_iter()
            .map(|a| match a {
                Arg::Simple(b) => b.to_vec(),
                // Only SCAN-family commands have a cursor; none is relayed.
                _ => b"0".to_vec(),
            })
            .collect();
        let send = relays()
            .get(&self.id)
            .cloned()
            .ok_or_else(|| failed(format!("relay {} is closed", self.id)))?;
        let (tx, rx) = oneshot::channel();
        send(args, tx);
        let reply = match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => return Err(failed("the client dropped the command".into())),
            Err(_) => {
                return Err(RedisError::from((
                    ErrorKind::Io,
                    "client relay timed out",
                    format!("no reply within {} ms", self.timeout.as_millis()),
                )))
            }
        };
        let bytes = reply.map_err(failed)?;
        let value = redis::parse_redis_value(&bytes)?;
        match value {
            Value::ServerError(e) => Err(e.into()),
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay_of(id: u32, answer: &'static [u8]) {
        register(
            id,
            Arc::new(move |args, tx| {
                assert!(!args.is_empty());
                let _ = tx.send(Ok(answer.to_vec()));
            }),
        );
    }

    #[tokio::test]
    async fn replies_come_back_as_values_and_errors_as_errors() {
        relay_of(9001, b":1\r\n");
        let r = Relayed::new(9001, Duration::from_secs(1));
        assert_eq!(
            r.send(redis::cmd("DEL").arg("k")).await.unwrap(),
            Value::Int(1)
        );
        relay_of(9002, b"-NOSCRIPT No matching script\r\n");
        let r = Relayed::new(9002, Duration::from_secs(1));
        let err = r.send(redis::cmd("EVALSHA").arg("x")).await.unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Server(redis::ServerErrorKind::NoScript)
        );
        unregister(9001);
        let r = Relayed::new(9001, Duration::from_secs(1));
        assert!(r.send(redis::cmd("PING").arg("x")).await.is_err());
        unregister(9002);
    }

    #[tokio::test]
    async fn a_client_that_never_answers_times_out() {
        register(9003, Arc::new(|_, tx| std::mem::forget(tx)));
        let r = Relayed::new(9003, Duration::from_millis(20));
        let err = r.send(&redis::cmd("PING")).await.unwrap_err();
        assert!(err.to_string().contains("timed out"), "{err}");
        unregister(9003);
    }
}
