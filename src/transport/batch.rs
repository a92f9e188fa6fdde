//! Coalesces the commands issued during one turn of the runtime into one
//! pipeline. Many locks share one connection; sending their commands one by
//! one costs a channel message, a reply timer and a wake-up each inside the
//! `redis` crate. Here every command issued before the runtime gets back to
//! this batch's flush task goes out as one pipeline, and each caller gets its
//! own reply. Order is kept: commands are sent in the order they were issued.

use std::sync::{Arc, Mutex};

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{Cmd, Pipeline, RedisError, RedisResult, Value};
use tokio::sync::oneshot;

type Reply = oneshot::Sender<RedisResult<Value>>;

#[derive(Default)]
struct Queue {
    cmds: Vec<Cmd>,
    replies: Vec<Reply>,
    /// A flush task is spawned and has not yet taken the queue.
    scheduled: bool,
}

pub(crate) struct Batcher {
    manager: ConnectionManager,
    queue: Mutex<Queue>,
}

impl Batcher {
    pub(crate) fn new(manager: ConnectionManager) -> Arc<Batcher> {
        Arc::new(Batcher {
            manager,
            queue: Mutex::new(Queue::default()),
        })
    }

    pub(crate) fn manager(&self) -> &ConnectionManager {
        &self.manager
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        // Poisoning only means a panic elsewhere; the queue stays consistent.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `cmd` with the next batch and waits for its reply. Must be
    /// called from within a Tokio runtime.
    pub(crate) async fn send(self: &Arc<Self>, cmd: &Cmd) -> RedisResult<Value> {
        let (tx, rx) = oneshot::channel();
        let spawn = {
            let mut queue = self.queue();
            queue.cmds.push(cmd.clone());
            queue.replies.push(tx);
            !std::mem::replace(&mut queue.scheduled, true)
        };
        if spawn {
            let this = Arc::clone(self);
            tokio::spawn(async move { this.flush().await });
        }
        match rx.await {
            Ok(reply) => reply,
            Err(_) => Err(RedisError::from(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "the command's batch was dropped",
            ))),
        }
    }

    async fn flush(&self) {
        // Let every task that is ready now add its command first.
        tokio::task::yield_now().await;
        let (cmds, replies) = {
            let mut queue = self.queue();
            queue.scheduled = false;
            (
                std::mem::take(&mut queue.cmds),
                std::mem::take(&mut queue.replies),
            )
        };
        let mut manager = self.manager.clone();
        if cmds.len() == 1 {
            let reply = manager.req_packed_command(&cmds[0]).await;
            if let Some(tx) = replies.into_iter().next() {
                let _ = tx.send(reply);
            }
            return;
        }
        let count = cmds.len();
        let mut pipe = Pipeline::with_capacity(count);
        for cmd in cmds {
            pipe.add_command(cmd);
        }
        match manager.req_packed_commands(&pipe, 0, count).await {
            // Server errors come back as `Value::ServerError` items, which
            // `Cmd::query_async` turns into errors for that caller only.
            Ok(values) if values.len() == count => {
                for (value, tx) in values.into_iter().zip(replies) {
                    let _ = tx.send(Ok(value));
                }
            }
            Ok(values) => {
                let err = RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("pipeline of {count} commands got {} replies", values.len()),
                ));
                for tx in replies {
                    let _ = tx.send(Err(err.clone()));
                }
            }
            Err(err) => {
                for tx in replies {
                    let _ = tx.send(Err(err.clone()));
                }
            }
        }
    }
}
