//! What the server tests share: a real `redis-server` (or the binary
//! REDISLOCK_RS_SERVER names: scripts/test-engines.js runs them on a
//! valkey-server too) started on a free port, keeping nothing on disk, and
//! stopped when dropped.

#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redislock_rs::transport::endpoint::{Endpoint, EndpointSpec};

pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Server {
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// A server with extra `redis-server` arguments.
    pub fn start_with(extra: &[&str]) -> Server {
        Server::start_on(free_port(), extra)
    }

    /// A server on `port`.
    pub fn start_on(port: u16, extra: &[&str]) -> Server {
        // REDISLOCK_RS_SERVER: another server binary (a valkey-server;
        // scripts/test-engines.js runs these tests on both).
        let bin = std::env::var("REDISLOCK_RS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let child = Command::new(bin)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server { child, port }
    }

    pub fn endpoint(&self, db: i64) -> Endpoint {
        Endpoint::resolve(EndpointSpec {
            port: Some(u32::from(self.port)),
            db: Some(db),
            ..EndpointSpec::default()
        })
        .expect("endpoint")
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn raw(server: &Server, db: i64) -> redis::aio::MultiplexedConnection {
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{}/{db}", server.port)).expect("client");
    client
        .get_multiplexed_async_connection()
        .await
        .expect("raw connection")
}
