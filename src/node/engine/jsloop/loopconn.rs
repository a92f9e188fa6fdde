//! `LoopConn`: what the lock logic runs on, the redis crate's
//! `ConnectionLike` over the engine's shared connection to an endpoint.
//! The operations (mod.rs) know only this type; sockets, TLS and the
//! reply queue stay below it, in conn.rs and its parts.

use std::io;
use std::sync::Arc;

use futures_util::FutureExt;
use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio::sync::oneshot;

use super::conn::{conn_of, Conn};
use super::pending::io_err;
use super::reactor;
use crate::transport::endpoint::Endpoint;

/// One operation's view of the engine's connection to an endpoint: the
/// `ConnectionLike` the lock logic runs on. It stays on the connection its
/// first command went to while that one lives (so a clean-up follows its
/// `SET`), and moves to the endpoint's current connection after a break.
pub(crate) struct LoopConn {
    endpoint_id: u32,
    endpoint: Arc<Endpoint>,
    conn: Option<u64>,
}

impl LoopConn {
    /// Binds to the endpoint's current connection (opening one if there is
    /// none) and waits until it is usable. A failure here is the connect's
    /// (`Error::Connection`), reported once: the lock logic's retry after a
    /// broken connection is for commands, not for a server that is down.
    pub(crate) async fn connect(endpoint_id: u32) -> crate::error::Result<LoopConn> {
        let unavailable = || {
            crate::error::Error::Connection("the JavaScript environment is shutting down".into())
        };
        let (endpoint, id, wait) = {
            let engine = reactor::current().ok_or_else(unavailable)?;
            let endpoint = engine.endpoint(endpoint_id)?;
            let conn = Conn::for_endpoint(&engine, endpoint_id, &endpoint);
            let mut c = conn.borrow_mut();
            if let Some(why) = c.closed_error() {
                // Failed at once (e.g. no such socket).
                return Err(crate::error::Error::Connection(why));
            }
            let wait = c.wait_ready();
            (endpoint, c.id(), wait)
        };
        if let Some(rx) = wait {
            match rx.await {
                Ok(Ok(())) => {}
                Ok(Err(why)) => return Err(crate::error::Error::Connection(why)),
                Err(_) => return Err(unavailable()),
            }
        }
        Ok(LoopConn {
            endpoint_id,
            endpoint,
            conn: Some(id),
        })
    }

    /// Which connection of the engine this handle is bound to.
    pub(crate) fn conn_id(&self) -> u64 {
        self.conn.unwrap_or(u64::MAX)
    }

    fn submit(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>),
        replies: usize,
        rx: impl FnMut(oneshot::Receiver<RedisResult<Value>>),
    ) -> RedisResult<()> {
        let engine = reactor::current().ok_or_else(|| {
            io_err(
                io::ErrorKind::NotConnected,
                "the JavaScript environment is shutting down".into(),
            )
        })?;
        let live = self.conn.and_then(|id| conn_of(&engine, id));
        let conn = match live {
            Some(conn) => conn,
            None => {
                let conn = Conn::for_endpoint(&engine, self.endpoint_id, &self.endpoint);
                let c = conn.borrow();
                self.conn = Some(c.id());
                if let Some(why) = c.closed_error() {
                    return Err(io_err(io::ErrorKind::ConnectionRefused, why));
                }
                drop(c);
                conn
            }
        };
        Conn::push(&conn, &engine, write, replies, rx);
        Ok(())
    }
}

async fn reply(rx: oneshot::Receiver<RedisResult<Value>>) -> RedisResult<Value> {
    rx.await.unwrap_or_else(|_| {
        Err(io_err(
            io::ErrorKind::ConnectionAborted,
            "the connection was closed".into(),
        ))
    })
}

impl ConnectionLike for LoopConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let mut slot = None;
        let submitted = self.submit(|out| cmd.write_packed_command(out), 1, |rx| slot = Some(rx));
        async move {
            submitted?;
            match slot {
                Some(rx) => reply(rx).await,
                None => Err(io_err(io::ErrorKind::Other, "no reply slot".into())),
            }
        }
        .boxed()
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let mut slots = Vec::with_capacity(offset + count);
        let submitted = self.submit(
            |out| out.extend_from_slice(&pipeline.get_packed_pipeline()),
            offset + count,
            |rx| slots.push(rx),
        );
        async move {
            submitted?;
            let mut values = Vec::with_capacity(count);
            for (i, rx) in slots.into_iter().enumerate() {
                let value = reply(rx).await?;
                if i >= offset {
                    values.push(value);
                }
            }
            Ok(values)
        }
        .boxed()
    }

    fn get_db(&self) -> i64 {
        self.endpoint.db
    }
}
