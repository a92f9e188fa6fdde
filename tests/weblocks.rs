//! The Web Locks queue (src/locks/weblocks.rs) against a real server: the
//! spec's rules step by step, as several processes would take them (each
//! request is its own id and client; the steps interleave as they would
//! across a fleet).

mod common;

use std::time::Duration;

use common::{raw, Server};
use redis::aio::MultiplexedConnection;
use redislock_rs::locks::weblocks::{self, Aborted, How, Info, Mode, Queue, Snapshot, Status};

const P: &str = "PUBLISH";
const LEASE: u64 = 10_000;

async fn req(c: &mut MultiplexedConnection, q: &Queue, id: &str, mode: Mode, how: How) -> Status {
    weblocks::request(c, q, P, id, mode, LEASE, &format!("client-{id}"), how)
        .await
        .expect("request")
}

/// Makes request `id` as `how` says and asserts where it stands.
async fn expect(
    c: &mut MultiplexedConnection,
    q: &Queue,
    id: &str,
    (mode, how): (Mode, How),
    want: Status,
) {
    assert_eq!(req(c, q, id, mode, how).await, want, "request {id}");
}

async fn poll(c: &mut MultiplexedConnection, q: &Queue, id: &str) -> Status {
    weblocks::poll(c, q, P, id, LEASE).await.expect("poll")
}

async fn release(c: &mut MultiplexedConnection, q: &Queue, id: &str) -> bool {
    weblocks::release(c, q, P, id).await.expect("release")
}

fn ids(list: &[Info]) -> Vec<&str> {
    list.iter().map(|i| i.id.as_str()).collect()
}

async fn snapshot(c: &mut MultiplexedConnection, q: &Queue) -> Snapshot {
    weblocks::snapshot(c, q, P).await.expect("snapshot")
}

#[tokio::test]
async fn exclusive_requests_are_granted_in_order_and_nothing_is_left() {
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let q = Queue::new("t:", b"invoice:42");
    expect(&mut c, &q, "a", (Mode::Exclusive, How::Queue), Status::Held).await;
    expect(
        &mut c,
        &q,
        "b",
        (Mode::Exclusive, How::Queue),
        Status::Pending,
    )
    .await;
    expect(
        &mut c,
        &q,
        "c",
        (Mode::Exclusive, How::Queue),
        Status::Pending,
    )
    .await;
    let s = snapshot(&mut c, &q).await;
    assert_eq!((ids(&s.held), ids(&s.pending)), (vec!["a"], vec!["b", "c"]));
    assert_eq!(s.held[0].client_id, "client-a");
    assert_eq!(s.held[0].mode, Mode::Exclusive);

    assert!(release(&mut c, &q, "a").await);
    assert_eq!(
        poll(&mut c, &q, "c").await,
        Status::Pending,
        "c waits behind b"
    );
    assert_eq!(poll(&mut c, &q, "b").await, Status::Held);
    assert!(release(&mut c, &q, "b").await);
    assert_eq!(poll(&mut c, &q, "c").await, Status::Held);
    assert!(release(&mut c, &q, "c").await);
    assert!(
        !release(&mut c, &q, "c").await,
        "a second release finds nothing"
    );

    let keys: i64 = redis::cmd("DBSIZE")
        .query_async(&mut c)
        .await
        .expect("dbsize");
    assert_eq!(keys, 0, "an idle name leaves no key");
}

#[tokio::test]
async fn shared_requests_are_granted_together_but_wait_behind_an_earlier_exclusive() {
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let q = Queue::new("t:", b"cache");
    expect(&mut c, &q, "s1", (Mode::Shared, How::Queue), Status::Held).await;
    expect(&mut c, &q, "s2", (Mode::Shared, How::Queue), Status::Held).await;
    expect(
        &mut c,
        &q,
        "x",
        (Mode::Exclusive, How::Queue),
        Status::Pending,
    )
    .await;
    expect(
        &mut c,
        &q,
        "s3",
        (Mode::Shared, How::Queue),
        Status::Pending,
    )
    .await; // a shared request queued behind an exclusive one waits
    assert!(release(&mut c, &q, "s1").await);
    assert_eq!(
        poll(&mut c, &q, "x").await,
        Status::Pending,
        "s2 still holds"
    );
    assert!(release(&mut c, &q, "s2").await);
    assert_eq!(poll(&mut c, &q, "x").await, Status::Held);
    assert_eq!(poll(&mut c, &q, "s3").await, Status::Pending);
    assert!(release(&mut c, &q, "x").await);
    assert_eq!(poll(&mut c, &q, "s3").await, Status::Held);
    assert!(release(&mut c, &q, "s3").await);
}

#[tokio::test]
async fn if_available_grants_now_or_writes_nothing() {
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let q = Queue::new("t:", b"job");
    expect(
        &mut c,
        &q,
        "a",
        (Mode::Exclusive, How::IfAvailable),
        Status::Held,
    )
    .await;
    expect(
        &mut c,
        &q,
        "b",
        (Mode::Exclusive, How::IfAvailable),
        Status::Gone,
    )
    .await;
    expect(
        &mut c,
        &q,
        "s",
        (Mode::Shared, How::IfAvailable),
        Status::Gone,
    )
    .await;
    let s = snapshot(&mut c, &q).await;
    assert_eq!((ids(&s.held), ids(&s.pending)), (vec!["a"], vec![]));
    // A queued request makes the name unavailable even to a compatible one.
    assert!(release(&mut c, &q, "a").await);
    expect(&mut c, &q, "s1", (Mode::Shared, How::Queue), Status::Held).await;
    expect(
        &mut c,
        &q,
        "x",
        (Mode::Exclusive, How::Queue),
        Status::Pending,
    )
    .await;
    expect(
        &mut c,
        &q,
        "s2",
        (Mode::Shared, How::IfAvailable),
        Status::Gone,
    )
    .await;
}

#[tokio::test]
async fn steal_takes_the_name_at_once_and_the_old_holders_lose_it() {
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let q = Queue::new("t:", b"job");
    expect(
        &mut c,
        &q,
        "old",
        (Mode::Exclusive, How::Queue),
        Status::Held,
    )
    .await;
    expect(
        &mut c,
        &q,
        "waiting",
        (Mode::Exclusive, How::Queue),
        Status::Pending,
    )
    .await;
    expect(
        &mut c,
        &q,
        "thief",
        (Mode::Exclusive, How::Steal),
        Status::Held,
    )
    .await;
    assert!(!weblocks::renew(&mut c, &q, P, "old", LEASE)
        .await
        .expect("renew"));
    assert!(
        !release(&mut c, &q, "old").await,
        "the old holder's release finds nothing"
    );
    assert_eq!(
        poll(&mut c, &q, "waiting").await,
        Status::Pending,
        "the queue stays"
    );
    assert!(weblocks::renew(&mut c, &q, P, "thief", LEASE)
        .await
        .expect("renew"));
    assert!(release(&mut c, &q, "thief").await);
    assert_eq!(poll(&mut c, &q, "waiting").await, Status::Held);
}

#[tokio::test]
async fn an_aborted_request_leaves_no_trace_and_lets_those_behind_it_in() {
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let q = Queue::new("t:", b"res");
    expect(&mut c, &q, "s1", (Mode::Shared, How::Queue), Status::Held).await;
    expect(
        &mut c,
        &q,
        "x",
        (Mode::Exclusive, How::Queue),
        Status::Pending,
    )
    .await;
    expect(
        &mut c,
        &q,
        "s2",
        (Mode::Shared, How::Queue),
        Status::Pending,
    )
    .await;
    let aborted = weblocks::abort(&mut c, &q, P, "x").await.expect("abort");
    assert_eq!(aborted, Aborted::Removed);
    let s = snapshot(&mut c, &q).await;
    assert_eq!((ids(&s.held), ids(&s.pending)), (vec!["s1", "s2"], vec![]));
    let again = weblocks::abort(&mut c, &q, P, "s2").await.expect("abort");
    assert_eq!(
        again,
        Aborted::Held,
        "granted before the abort: the caller releases it"
    );
    assert_eq!(
        weblocks::abort(&mut c, &q, P, "nobody")
            .await
            .expect("abort"),
        Aborted::Gone
    );
}

#[tokio::test]
async fn a_dead_holder_and_a_dead_waiter_stop_blocking_after_their_lease() {
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let q = Queue::new("t:", b"lease");
    let held = weblocks::request(&mut c, &q, P, "dead", Mode::Exclusive, 150, "d", How::Queue);
    assert_eq!(held.await.expect("request"), Status::Held);
    let queued = weblocks::request(&mut c, &q, P, "gone", Mode::Exclusive, 150, "g", How::Queue);
    assert_eq!(queued.await.expect("request"), Status::Pending);
    expect(
        &mut c,
        &q,
        "live",
        (Mode::Exclusive, How::Queue),
        Status::Pending,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    // Neither renewed nor polled: both expired; the live waiter's poll
    // finds the name free.
    assert_eq!(poll(&mut c, &q, "live").await, Status::Held);
    let s = snapshot(&mut c, &q).await;
    assert_eq!((ids(&s.held), ids(&s.pending)), (vec!["live"], vec![]));
    assert!(!weblocks::renew(&mut c, &q, P, "dead", LEASE)
        .await
        .expect("renew"));
}

#[tokio::test]
async fn names_are_bytes_and_prefixes_never_interfere() {
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let a = Queue::new("one:", b"\0\xed\xa0\x80");
    let b = Queue::new("two:", b"\0\xed\xa0\x80");
    let other = Queue::new("one:", b"\0\xed\xa0\x81");
    expect(&mut c, &a, "a", (Mode::Exclusive, How::Queue), Status::Held).await;
    expect(&mut c, &b, "b", (Mode::Exclusive, How::Queue), Status::Held).await;
    expect(
        &mut c,
        &other,
        "o",
        (Mode::Exclusive, How::Queue),
        Status::Held,
    )
    .await;
}

#[tokio::test]
async fn a_grant_made_for_someone_else_is_announced_to_that_request_alone() {
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let q = Queue::new("t:", b"announce");
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{}/0", server.port)).expect("client");
    let mut sub = client.get_async_pubsub().await.expect("pubsub");
    sub.subscribe(q.granted_channel("b"))
        .await
        .expect("subscribe");
    sub.subscribe(q.granted_channel("c"))
        .await
        .expect("subscribe");
    expect(&mut c, &q, "a", (Mode::Exclusive, How::Queue), Status::Held).await;
    expect(
        &mut c,
        &q,
        "b",
        (Mode::Exclusive, How::Queue),
        Status::Pending,
    )
    .await;
    assert!(release(&mut c, &q, "a").await);
    use futures_util::StreamExt;
    let mut messages = sub.on_message();
    let heard = tokio::time::timeout(Duration::from_secs(5), messages.next()).await;
    assert!(
        matches!(heard, Ok(Some(_))),
        "b's grant by a's release was announced"
    );
}
