//! The napi side of transport/relay.rs: a client with no server we can
//! reach (ioredis-mock, a user's wrapper) is a relay, and each command the
//! core sends through it is handed to JavaScript (lib/common/relay.js calls
//! the client's own method) as a ticket and its arguments; JavaScript
//! answers with `relayReply(ticket, resp | null, error)`. Such endpoints are
//! served by the tokio engine: the call into JavaScript is queued on the
//! JavaScript thread by a weak threadsafe function (it keeps nothing
//! alive), never made from inside an operation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use napi_derive::napi;
use tokio::sync::oneshot;

use crate::transport::relay::{self, Reply};

type Args = (u32, Vec<Buffer>);
type SendToJs = ThreadsafeFunction<Args, (), FnArgs<Args>, Status, false, true>;

/// The commands waiting for JavaScript's answer, by ticket.
#[derive(Default)]
struct Tickets {
    next: u32,
    waiting: HashMap<u32, oneshot::Sender<Reply>>,
}

static TICKETS: LazyLock<Mutex<Tickets>> = LazyLock::new(Mutex::default);
static NEXT_RELAY: AtomicU32 = AtomicU32::new(0);

fn tickets() -> std::sync::MutexGuard<'static, Tickets> {
    // A poisoned lock only means a panic elsewhere; the map stays whole.
    TICKETS.lock().unwrap_or_else(|p| p.into_inner())
}

fn take(ticket: u32) -> Option<oneshot::Sender<Reply>> {
    tickets().waiting.remove(&ticket)
}

/// Opens a relay whose commands go to `send(ticket, args)`; its id names
/// the endpoint (`new RedisConnection({ relay: id })`).
#[napi(catch_unwind)]
pub fn relay_open(send: Function<FnArgs<Args>, ()>) -> napi::Result<u32> {
    let to_js: SendToJs = send
        .build_threadsafe_function::<Args>()
        .callee_handled::<false>()
        .weak::<true>()
        .build_callback(|ctx: ThreadsafeCallContext<Args>| Ok(FnArgs::from(ctx.value)))?;
    let id = NEXT_RELAY.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    relay::register(
        id,
        Arc::new(move |args: Vec<Vec<u8>>, tx: oneshot::Sender<Reply>| {
            let ticket = {
                let mut t = tickets();
                t.next = t.next.wrapping_add(1);
                let ticket = t.next;
                t.waiting.insert(ticket, tx);
                ticket
            };
            let args = args.into_iter().map(Buffer::from).collect();
            let status = to_js.call((ticket, args), ThreadsafeFunctionCallMode::NonBlocking);
            if status != Status::Ok {
                if let Some(tx) = take(ticket) {
                    let _ = tx.send(Err(format!("the client's thread is gone ({status})")));
                }
            }
        }),
    );
    Ok(id)
}

/// JavaScript's answer to command `ticket`: the reply as RESP bytes, or
/// (`reply` null) why the client failed.
#[napi(catch_unwind)]
pub fn relay_reply(ticket: u32, reply: Option<Buffer>, error: Option<String>) {
    if let Some(tx) = take(ticket) {
        let _ = tx.send(match reply {
            Some(bytes) => Ok(bytes.to_vec()),
            None => Err(error.unwrap_or_else(|| "the client failed".into())),
        });
    }
}
