//! The core against a real `redis-server` this test starts on a free port.

mod common;

use std::net::TcpListener;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{free_port, raw, Server};

use redislock_rs::error::Error;
use redislock_rs::locks::token::{self, AcquireOptions};
use redislock_rs::transport::connection::SharedConnection;
use redislock_rs::transport::dialect::Dialect;

/// What the test servers speak (all run the same binary: Redis, or with
/// REDISLOCK_RS_SERVER a Valkey 9 that locks without Lua), learned once.
static DIALECT: Dialect = Dialect::new();
use redislock_rs::transport::endpoint::{Endpoint, EndpointSpec};
use redislock_rs::waiting::retry::Retries;
use redislock_rs::waiting::timer::TokioTimer;

fn opts(ttl_ms: u64, retries: Retries, delay_ms: u64) -> AcquireOptions {
    AcquireOptions {
        ttl_ms,
        retries,
        delay: Duration::from_millis(delay_ms),
    }
}

#[tokio::test]
async fn acquire_release_extend_round_trip() {
    let server = Server::start();
    let shared = SharedConnection::shared(server.endpoint(3));
    let mut conn = shared.get().await.expect("connect");
    let mut check = raw(&server, 3).await;
    let token = token::new_token();

    assert!(token::acquire(
        &mut conn,
        &TokioTimer,
        "k",
        &token,
        &opts(10_000, Retries::Count(0), 50)
    )
    .await
    .unwrap());
    let stored: Option<String> = redis::cmd("GET")
        .arg("k")
        .query_async(&mut check)
        .await
        .unwrap();
    assert_eq!(stored.as_deref(), Some(token.as_str()));
    let ttl: i64 = redis::cmd("PTTL")
        .arg("k")
        .query_async(&mut check)
        .await
        .unwrap();
    assert!(ttl > 9_000 && ttl <= 10_000, "ttl {ttl}");

    // Someone else cannot take it, and their token releases nothing.
    let other = token::new_token();
    assert!(!token::acquire(
        &mut conn,
        &TokioTimer,
        "k",
        &other,
        &opts(10_000, Retries::Count(0), 50)
    )
    .await
    .unwrap());
    assert!(!token::release(&mut conn, &DIALECT, "k", &other)
        .await
        .unwrap());
    assert!(!token::extend(&mut conn, &DIALECT, "k", &other, 50_000)
        .await
        .unwrap());

    assert!(token::extend(&mut conn, &DIALECT, "k", &token, 50_000)
        .await
        .unwrap());
    let ttl: i64 = redis::cmd("PTTL")
        .arg("k")
        .query_async(&mut check)
        .await
        .unwrap();
    assert!(ttl > 49_000, "ttl after extend {ttl}");

    assert!(token::release(&mut conn, &DIALECT, "k", &token)
        .await
        .unwrap());
    let exists: i64 = redis::cmd("EXISTS")
        .arg("k")
        .query_async(&mut check)
        .await
        .unwrap();
    assert_eq!(exists, 0);
    assert!(!token::release(&mut conn, &DIALECT, "k", &token)
        .await
        .unwrap());
}

#[tokio::test]
async fn retries_are_counted_and_spaced_by_delay() {
    let server = Server::start();
    let shared = SharedConnection::shared(server.endpoint(0));
    let mut conn = shared.get().await.expect("connect");
    let holder = token::new_token();
    assert!(token::acquire(
        &mut conn,
        &TokioTimer,
        "busy",
        &holder,
        &opts(10_000, Retries::Count(0), 0)
    )
    .await
    .unwrap());

    let mut check = raw(&server, 0).await;
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut check)
        .await
        .unwrap();
    let started = Instant::now();
    let got = token::acquire(
        &mut conn,
        &TokioTimer,
        "busy",
        &token::new_token(),
        &opts(10_000, Retries::Count(3), 40),
    )
    .await;
    let waited = started.elapsed();
    assert!(!got.unwrap());
    assert!(
        waited >= Duration::from_millis(120),
        "3 delays of 40 ms, waited {waited:?}"
    );
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut check)
        .await
        .unwrap();
    assert!(
        stats.contains("cmdstat_set:calls=4,"),
        "4 attempts expected: {stats}"
    );
}

#[tokio::test]
async fn waiting_forever_gets_the_lock_once_released() {
    let server = Server::start();
    let shared = SharedConnection::shared(server.endpoint(0));
    let mut conn = shared.get().await.expect("connect");
    let holder = token::new_token();
    assert!(token::acquire(
        &mut conn,
        &TokioTimer,
        "w",
        &holder,
        &opts(10_000, Retries::Count(0), 0)
    )
    .await
    .unwrap());

    let mut waiter_conn = shared.get().await.expect("second handle");
    let waiter = tokio::spawn(async move {
        token::acquire(
            &mut waiter_conn,
            &TokioTimer,
            "w",
            &token::new_token(),
            &opts(10_000, Retries::Forever, 10),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished());
    assert!(token::release(&mut conn, &DIALECT, "w", &holder)
        .await
        .unwrap());
    let got = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("waiter finished")
        .expect("join");
    assert!(got.unwrap());
}

#[tokio::test]
async fn equal_endpoints_share_one_connection() {
    let server = Server::start();
    let a = SharedConnection::shared(server.endpoint(1));
    let b = SharedConnection::shared(server.endpoint(1));
    let c = SharedConnection::shared(server.endpoint(2));
    assert!(Arc::ptr_eq(&a, &b));
    assert!(!Arc::ptr_eq(&a, &c));
}

#[tokio::test]
async fn unreachable_server_fails_fast_with_a_connection_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = Endpoint::resolve(EndpointSpec {
        port: Some(u32::from(port)),
        password: Some("topsecret".into()),
        ..EndpointSpec::default()
    })
    .unwrap();
    let shared = SharedConnection::shared(endpoint);
    let started = Instant::now();
    let err = match shared.get().await {
        Ok(_) => panic!("connected to a closed port"),
        Err(e) => e,
    };
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::Connection(_)), "{err:?}");
    assert!(!err.message().contains("topsecret"));
}

#[tokio::test]
async fn release_and_extend_survive_script_flush() {
    let server = Server::start();
    let shared = SharedConnection::shared(server.endpoint(0));
    let mut conn = shared.get().await.expect("connect");
    let mut check = raw(&server, 0).await;
    let token = token::new_token();
    assert!(token::acquire(
        &mut conn,
        &TokioTimer,
        "f",
        &token,
        &opts(10_000, Retries::Count(0), 0)
    )
    .await
    .unwrap());
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut check)
        .await
        .unwrap();
    assert!(token::extend(&mut conn, &DIALECT, "f", &token, 20_000)
        .await
        .unwrap());
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut check)
        .await
        .unwrap();
    assert!(token::release(&mut conn, &DIALECT, "f", &token)
        .await
        .unwrap());
}

#[tokio::test]
async fn invalid_arguments_are_errors_not_panics() {
    let server = Server::start();
    let shared = SharedConnection::shared(server.endpoint(0));
    let mut conn = shared.get().await.expect("connect");
    let err = token::acquire(
        &mut conn,
        &TokioTimer,
        "",
        "t",
        &opts(100, Retries::Count(0), 0),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
    let err = token::acquire(
        &mut conn,
        &TokioTimer,
        "k",
        "t",
        &opts(0, Retries::Count(0), 0),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
    let err = token::extend(&mut conn, &DIALECT, "k", "t", 0)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
}

#[tokio::test]
async fn locks_over_a_unix_socket_from_url_or_path() {
    let dir = std::env::temp_dir().join(format!("redislock-rs-core-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let socket = dir.join("redis.sock");
    let socket_str = socket.to_str().expect("utf-8 temp path").to_owned();
    let server = Server::start_with(&["--unixsocket", &socket_str, "--unixsocketperm", "700"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "no unix socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let by_url = Endpoint::resolve(EndpointSpec {
        url: Some(format!("unix://{socket_str}?db=2")),
        ..EndpointSpec::default()
    })
    .unwrap();
    let by_path = Endpoint::resolve(EndpointSpec {
        path: Some(socket_str.clone()),
        db: Some(2),
        ..EndpointSpec::default()
    })
    .unwrap();
    assert_eq!(by_url, by_path);
    let shared = SharedConnection::shared(by_path);
    let mut conn = shared.get().await.expect("connect over the socket");
    let mut check = raw(&server, 2).await;
    let token = token::new_token();
    assert!(token::acquire(
        &mut conn,
        &TokioTimer,
        "u",
        &token,
        &opts(10_000, Retries::Count(0), 0)
    )
    .await
    .unwrap());
    let stored: Option<String> = redis::cmd("GET")
        .arg("u")
        .query_async(&mut check)
        .await
        .unwrap();
    assert_eq!(stored.as_deref(), Some(token.as_str()));
    assert!(token::release(&mut conn, &DIALECT, "u", &token)
        .await
        .unwrap());
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An environment that ends (a worker terminated) stops its leases at once
/// — their keys then only run down their TTL — and only its own: another
/// environment's lease goes on being renewed. A lease started for an
/// ended environment is not kept.
#[tokio::test]
async fn an_ended_environment_stops_only_its_own_leases() {
    use redislock_rs::keeper::{self, Held, Liveness, Watch};

    let server = Server::start();
    let shared = SharedConnection::shared(server.endpoint(5));
    let mut conn = shared.get().await.expect("connect");
    let mut check = raw(&server, 5).await;
    let rt = tokio::runtime::Handle::current();
    let lease = 600;
    let (gone_env, live_env) = (Liveness::new(), Liveness::new());
    let mut helds = Vec::new();
    for (key, env) in [("ended:a", &gone_env), ("live:b", &live_env)] {
        let token = token::new_token();
        let sent = Instant::now();
        let o = opts(lease, Retries::Count(0), 50);
        assert!(token::acquire(&mut conn, &TokioTimer, key, &token, &o)
            .await
            .unwrap());
        let held = Held::new(&shared, key, &token, token::KEPT);
        let watch = Watch {
            liveness: Arc::clone(env),
            hold: 1,
            max_lag: Duration::from_secs(60),
            max_hold: None,
        };
        let until = sent + Duration::from_millis(lease);
        let one = Box::new(token::Kept {
            server: Arc::clone(&shared),
            key: key.into(),
            token: token.clone(),
        });
        keeper::start(&rt, one, held.clone(), lease, sent, until, Some(watch));
        helds.push(held);
    }
    let pttl = |check: &mut redis::aio::MultiplexedConnection, key: &'static str| {
        let mut c = check.clone();
        async move {
            let p: i64 = redis::cmd("PTTL")
                .arg(key)
                .query_async(&mut c)
                .await
                .unwrap();
            p
        }
    };
    // Both renewed past their lease.
    tokio::time::sleep(Duration::from_millis(2 * lease)).await;
    for key in ["ended:a", "live:b"] {
        assert!(pttl(&mut check, key).await > 0, "{key} renewed");
    }

    keeper::end(&gone_env);
    assert!(keeper::remaining(&helds[0]).is_none(), "no longer kept");
    assert!(
        keeper::remaining(&helds[1]).is_some(),
        "the other still kept"
    );
    tokio::time::sleep(Duration::from_millis(30)).await; // one in flight may land
    let ended = Instant::now();
    let mut last = pttl(&mut check, "ended:a").await;
    while last > 0 {
        assert!(
            ended.elapsed() < Duration::from_millis(lease + 1000),
            "expired by its TTL"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = pttl(&mut check, "ended:a").await;
        assert!(
            now <= last || now == -2,
            "renewed after the end: {last} -> {now}"
        );
        last = now;
    }
    tokio::time::sleep(Duration::from_millis(lease)).await;
    assert!(
        pttl(&mut check, "live:b").await > 0,
        "the live one still renewed"
    );
    assert!(
        gone_env.drain().is_empty(),
        "an ended environment is told nothing"
    );

    // Started after the end: not kept.
    let token = token::new_token();
    let late = Held::new(&shared, "ended:late", &token, token::KEPT);
    let watch = Watch {
        liveness: Arc::clone(&gone_env),
        hold: 2,
        max_lag: Duration::from_secs(60),
        max_hold: None,
    };
    let now = Instant::now();
    let until = now + Duration::from_millis(lease);
    let one = Box::new(token::Kept {
        server: Arc::clone(&shared),
        key: "ended:late".into(),
        token: token.clone(),
    });
    keeper::start(&rt, one, late.clone(), lease, now, until, Some(watch));
    assert!(keeper::remaining(&late).is_none());
    keeper::end(&live_env);
}

#[tokio::test]
async fn reentrant_try_lock_waits_out_the_holders_lease() {
    use redislock_rs::locks::reentrant::{self, Wait};
    let server = Server::start();
    let shared = SharedConnection::shared(server.endpoint(4));
    let mut conn = shared.get().await.expect("connect");
    let mut check = raw(&server, 4).await;
    let (name, me) = ("rlock", "me:1");
    async fn try_lock(
        conn: &mut impl redis::aio::ConnectionLike,
        wait: Wait,
    ) -> Result<bool, Error> {
        let (name, channel, me) = ("rlock", "redisson_lock__channel:{rlock}", "me:1");
        reentrant::try_lock(
            conn,
            &TokioTimer,
            None,
            name,
            channel,
            me,
            10_000,
            wait,
            reentrant::Flavor::Plain,
        )
        .await
        .map(|held| held.is_some())
    }
    // Another holder, whose lease ends in 300 ms.
    let _: () = redis::pipe()
        .hset(name, "other:1", 1)
        .pexpire(name, 300)
        .query_async(&mut check)
        .await
        .expect("hold");

    assert!(!try_lock(&mut conn, Wait::Once).await.expect("once"));
    let started = Instant::now();
    let held = try_lock(&mut conn, Wait::For(Duration::from_millis(50)))
        .await
        .expect("for 50 ms");
    let waited = started.elapsed();
    assert!(!held, "still held by the other");
    assert!(waited >= Duration::from_millis(50), "waited {waited:?}");
    assert!(waited < Duration::from_millis(250), "waited {waited:?}");

    // Without wake-ups, the holder's PTTL ends the sleep: taken once the
    // key expires, long before the deadline.
    let started = Instant::now();
    let held = try_lock(&mut conn, Wait::For(Duration::from_secs(5)))
        .await
        .expect("for 5 s");
    let waited = started.elapsed();
    assert!(held, "taken after the other's lease");
    assert!(waited < Duration::from_secs(2), "waited {waited:?}");

    // Re-entered at once: two holds.
    assert!(try_lock(&mut conn, Wait::Once).await.expect("again"));
    let count: i64 = redis::cmd("HGET")
        .arg(name)
        .arg(me)
        .query_async(&mut check)
        .await
        .expect("hget");
    assert_eq!(count, 2);
}

/// Stops (SIGSTOP) or resumes (SIGCONT) a test's own redis-server.
fn signal(server: &Server, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &server.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill {sig} failed");
}

/// Three servers, the third paused after its connection is made: an
/// acquire settles on the two that answer (the third's outcome is
/// `Unheard`, not a timeout it would have waited for), and its `SET`,
/// already sent, lands once the server runs again.
#[tokio::test]
async fn a_quorum_acquire_settles_on_a_majority_without_the_slowest_server() {
    use redislock_rs::locks::fanout::Outcome;
    use redislock_rs::locks::quorum::{self, QuorumOptions};
    let servers = [Server::start(), Server::start(), Server::start()];
    let conns = raw_all(&servers).await;
    let connect = |i: usize| {
        let c = conns[i].clone();
        async move { Ok::<_, Error>(c) }
    };
    signal(&servers[2], "-STOP");
    let within = Duration::from_secs(2);

    let opts = QuorumOptions {
        ttl_ms: 30_000,
        retries: Retries::Count(0),
        delay: Duration::ZERO,
        server_timeout: within,
        jitter: Duration::ZERO,
    };
    let r = quorum::acquire(
        3,
        connect,
        &|_| &DIALECT,
        &TokioTimer,
        "q:settle",
        "t1",
        &opts,
        &|| 0.5,
        None,
        None,
    )
    .await
    .expect("acquire");
    assert!(r.granted, "{r:?}");
    assert_eq!(r.outcomes[..2], [Outcome::Acquired, Outcome::Acquired]);
    assert_eq!(r.outcomes[2], Outcome::Unheard);

    // The unheard SET was sent: it lands once the server runs again.
    signal(&servers[2], "-CONT");
    let mut third = raw(&servers[2], 0).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let q: Option<String> = redis::cmd("GET")
            .arg("q:settle")
            .query_async(&mut third)
            .await
            .expect("get");
        if let Some(q) = q {
            assert_eq!(q, "t1");
            break;
        }
        assert!(Instant::now() < deadline, "the unheard SET never landed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A raw connection to database 0 of each of `servers`.
async fn raw_all(servers: &[Server]) -> Vec<redis::aio::MultiplexedConnection> {
    let mut out = Vec::new();
    for s in servers {
        out.push(raw(s, 0).await);
    }
    out
}

/// This face's semaphore acquires pass their numbers through as text;
/// redis-semaphore 5.8.0's (kept byte for byte as the oracle) turn them into
/// Lua numbers. Run side by side on the same starting sets, for limits,
/// leases (up to the largest safe integer, which Redis refuses) and
/// permits: the same answers, and the same members, scores and TTL.
#[tokio::test]
async fn the_semaphore_acquires_have_the_effects_of_redis_semaphores() {
    use redislock_rs::locks::semaphore::{
        MULTI_ACQUIRE, SEMAPHORE_ACQUIRE, THEIR_MULTI_ACQUIRE, THEIR_SEMAPHORE_ACQUIRE,
    };
    let server = Server::start();
    let mut c = raw(&server, 0).await;
    let now: i64 = 1_733_000_000_123;
    let starts: [&[(&str, i64)]; 4] = [
        &[],
        &[("old", now - 20_000), ("fresh", now - 10)],
        &[("a", now), ("b", now - 1), ("c", now - 999)],
        &[("x_0", now - 5), ("x_1", now - 50_000), ("y", now - 10_000)],
    ];
    let mut case = 0;
    for start in starts {
        for limit in [1u64, 2, 3, 5] {
            for ttl in [1i64, 1000, 10_000, 9_007_199_254_740_991] {
                for permits in [0u64, 1, 2] {
                    case += 1;
                    let (theirs, ours) = (format!("t:{case}"), format!("o:{case}"));
                    let mut answers = Vec::new();
                    for key in [&theirs, &ours] {
                        for (m, score) in start {
                            let _: () = redis::cmd("ZADD")
                                .arg(key)
                                .arg(score)
                                .arg(m)
                                .query_async(&mut c)
                                .await
                                .expect("zadd");
                        }
                        let ours_now = key == &ours;
                        let (text, mut argv): (&str, Vec<String>) = match (permits, ours_now) {
                            (0, false) => (THEIR_SEMAPHORE_ACQUIRE, vec![limit.to_string()]),
                            (0, true) => (SEMAPHORE_ACQUIRE, vec![limit.to_string()]),
                            (_, false) => (
                                THEIR_MULTI_ACQUIRE,
                                vec![limit.to_string(), permits.to_string()],
                            ),
                            (_, true) => {
                                (MULTI_ACQUIRE, vec![limit.to_string(), permits.to_string()])
                            }
                        };
                        argv.extend(["id".to_string(), ttl.to_string(), now.to_string()]);
                        if ours_now {
                            argv.push((now - ttl).to_string());
                        }
                        // The script and the reads in one transaction: a
                        // 1 ms lease cannot run out between them.
                        let replies: Vec<redis::RedisResult<redis::Value>> = redis::pipe()
                            .atomic()
                            .ignore_errors()
                            .cmd("EVAL")
                            .arg(text)
                            .arg(1)
                            .arg(key)
                            .arg(argv)
                            .cmd("ZRANGE")
                            .arg(key)
                            .arg(0)
                            .arg(-1)
                            .arg("WITHSCORES")
                            .cmd("PTTL")
                            .arg(key)
                            .query_async(&mut c)
                            .await
                            .expect("the transaction");
                        let [got, members, pttl] = <[_; 3]>::try_from(replies).expect("3 replies");
                        let got = got.map_err(|_| "an error").and_then(|v| {
                            redis::from_redis_value::<i64>(v).map_err(|_| "an error")
                        });
                        let members: Vec<(String, f64)> =
                            redis::from_redis_value(members.expect("zrange")).expect("zrange");
                        let pttl: i64 = redis::from_redis_value(pttl.expect("pttl")).expect("pttl");
                        answers.push((got, members, pttl));
                    }
                    let (t, o) = (&answers[0], &answers[1]);
                    let what =
                        format!("start {start:?}, limit {limit}, ttl {ttl}, permits {permits}");
                    assert_eq!((&t.0, &t.1), (&o.0, &o.1), "{what}");
                    // TTLs set a moment apart: the same within 100 ms, or both none.
                    assert_eq!(t.2 < 0, o.2 < 0, "{what}: pttl {} vs {}", t.2, o.2);
                    assert!((t.2 - o.2).abs() < 100, "{what}: pttl {} vs {}", t.2, o.2);
                }
            }
        }
    }
    assert_eq!(case, 4 * 4 * 4 * 3);
}

/// A connect begun while the server was down and abandoned by its caller
/// fails on its own; the first caller after the server is back must get a
/// fresh connect, not that stale "connection refused" (issue 33: the lease
/// keeper's first refresh after a restart failed this way).
#[tokio::test]
async fn a_connect_abandoned_while_the_server_was_down_is_not_replayed() {
    let port = free_port();
    let endpoint = Endpoint::resolve(EndpointSpec {
        port: Some(u32::from(port)),
        ..EndpointSpec::default()
    })
    .expect("endpoint");
    let bound = endpoint.connect_timeout;
    let shared = SharedConnection::shared(endpoint);
    // Polled once: the connect starts as its own task, and nobody waits.
    let abandoned = tokio::time::timeout(Duration::ZERO, shared.get()).await;
    assert!(abandoned.is_err(), "nothing listens: no connection yet");
    // The whole connect is bounded by the connect timeout: it has failed by now.
    tokio::time::sleep(bound + Duration::from_millis(200)).await;
    let server = Server::start_on(port, &[]);
    let mut conn = shared
        .get()
        .await
        .expect("the server is up: a fresh connect, not the abandoned one's failure");
    let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
    assert_eq!(pong, "PONG");
    drop(server);
}
