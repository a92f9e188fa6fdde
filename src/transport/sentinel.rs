//! Asking Sentinel where the primary is, bounded by one deadline.
//!
//! Every sentinel is asked at once (`SENTINEL MASTER <name>`: one round
//! trip); the first primary one names that says `ROLE master` itself wins.
//! What the others said decides the rest:
//! - some sentinel knows the name but has no primary up for it (mid-failover,
//!   or a primary briefly flagged down): ask again until the deadline;
//! - the sentinels that answered do not know the name: say so at once;
//! - none could be asked (refused, denied): say so at once, with each one's
//!   reason. Waiting would not change either answer.
//!
//! Every message names the sentinels tried.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use redis::{RedisConnectionInfo, Role};
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::transport::endpoint::{tcp_info, Endpoint, SentinelSpec};

/// A nameless Sentinel spec's primary name and every sentinel known.
type Learned = (String, Vec<(String, u16)>);

/// Pause between two rounds while Sentinel names no primary that is up.
const AGAIN: Duration = Duration::from_millis(100);

/// What one sentinel said of the primary named `name`.
enum Said {
    /// Names a primary that is up, and it says it is a primary.
    Primary(Box<redis::Client>),
    /// Monitors no primary of that name.
    Unknown,
    /// Knows the name, has no usable primary for it now (why).
    NotYet(String),
    /// Could not be asked (why).
    Unreachable(String),
}

/// One round's outcome when no primary was found.
enum Round {
    Found(Box<redis::Client>),
    /// Ask again: a sentinel knows the name but names no primary up yet.
    Again(String),
}

impl Endpoint {
    /// A `redis::Client` for the primary Sentinel names now, found by
    /// `deadline`.
    pub(crate) async fn sentinel_primary(
        &self,
        s: &SentinelSpec,
        deadline: Instant,
    ) -> Result<redis::Client> {
        let mut auth = RedisConnectionInfo::default().set_skip_set_lib_name();
        if let Some(user) = &s.username {
            auth = auth.set_username(user);
        }
        if let Some(pass) = &s.password {
            auth = auth.set_password(pass);
        }
        if let Some(tls) = &self.tls {
            if tls.ca.is_some() || tls.cert.is_some() || tls.key.is_some() {
                return Err(Error::InvalidArgument(
                    "Sentinel with a custom TLS CA or client certificate is not supported yet"
                        .into(),
                ));
            }
        }
        let (name, nodes) = match s.name.is_empty() {
            false => (s.name.clone(), s.nodes.clone()),
            true => tokio::time::timeout_at(deadline, self.learn_sentinel_name(s, &auth))
                .await
                .map_err(|_| {
                    Error::Connection(format!(
                        "Sentinel lookup timed out after {} ms: no sentinel said which primary the node-redis Sentinel client uses",
                        self.connect_timeout.as_millis()
                    ))
                })??,
        };
        loop {
            let why = match self.ask_sentinels(&name, &nodes, &auth, deadline).await? {
                Round::Found(client) => return Ok(*client),
                Round::Again(why) => why,
            };
            if Instant::now() + AGAIN >= deadline {
                return Err(Error::Connection(format!(
                    "Sentinel lookup timed out after {} ms: {why}",
                    self.connect_timeout.as_millis()
                )));
            }
            tokio::time::sleep(AGAIN).await;
        }
    }

    /// One round: every sentinel asked at once, each bounded by `deadline`.
    async fn ask_sentinels(
        &self,
        name: &str,
        nodes: &[(String, u16)],
        auth: &RedisConnectionInfo,
        deadline: Instant,
    ) -> Result<Round> {
        let mut asking: FuturesUnordered<_> = nodes
            .iter()
            .enumerate()
            .map(|(i, (host, port))| async move {
                (i, self.ask_one(host, *port, name, auth, deadline).await)
            })
            .collect();
        let mut said: Vec<Option<Said>> = nodes.iter().map(|_| None).collect();
        while let Some((i, answer)) = asking.next().await {
            match answer? {
                Said::Primary(client) => return Ok(Round::Found(client)),
                other => said[i] = Some(other),
            }
        }
        let at = |i: usize| format!("{}:{}", nodes[i].0, nodes[i].1);
        if let Some((i, why)) = said.iter().enumerate().find_map(|(i, s)| match s {
            Some(Said::NotYet(why)) => Some((i, why)),
            _ => None,
        }) {
            return Ok(Round::Again(format!(
                "sentinel {} has no primary up for {name:?}: {why}",
                at(i)
            )));
        }
        // Every sentinel that answered does not know the name, or none did.
        let known = said.iter().any(|s| matches!(s, Some(Said::Unknown)));
        let tried: Vec<String> = said
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                Some(Said::Unreachable(why)) => format!("{}: {why}", at(i)),
                _ => at(i),
            })
            .collect();
        let tried = tried.join(", ");
        Err(Error::Connection(match known {
            true => format!("no sentinel knows a primary named {name:?} (tried {tried})"),
            false => {
                format!("no sentinel could be asked for the primary named {name:?} (tried {tried})")
            }
        }))
    }

    /// What the sentinel at `host:port` says of `name`, by `deadline`.
    /// `Err` only for a setting that can never work.
    async fn ask_one(
        &self,
        host: &str,
        port: u16,
        name: &str,
        auth: &RedisConnectionInfo,
        deadline: Instant,
    ) -> Result<Said> {
        let late = || {
            format!(
                "did not answer within {} ms",
                self.connect_timeout.as_millis()
            )
        };
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.command_timeout));
        let sentinel = redis::Client::open(tcp_info(host, port, None, auth.clone())?)
            .map_err(|e| Error::InvalidArgument(format!("Invalid Sentinel settings: {e}")))?;
        let asked = async {
            let mut conn = sentinel
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::cmd("SENTINEL")
                .arg("MASTER")
                .arg(name)
                .query_async::<HashMap<String, String>>(&mut conn)
                .await
        };
        let master = match tokio::time::timeout_at(deadline, asked).await {
            Ok(Ok(master)) => master,
            // Redis's own words for a name it does not monitor.
            Ok(Err(e)) if e.detail().is_some_and(|d| d.contains("No such master")) => {
                return Ok(Said::Unknown)
            }
            Ok(Err(e)) => return Ok(Said::Unreachable(unreachable(&e))),
            Err(_) => return Ok(Said::Unreachable(late())),
        };
        let flags = master.get("flags").map(String::as_str).unwrap_or("");
        let up = flags.split(',').any(|f| f == "master")
            && !flags.split(',').any(|f| f == "s_down" || f == "o_down");
        let addr = master
            .get("ip")
            .zip(master.get("port").and_then(|p| p.parse::<u16>().ok()));
        let Some((ip, port)) = addr.filter(|_| up) else {
            return Ok(Said::NotYet(format!("its primary is flagged {flags:?}")));
        };
        // The primary itself must agree (a sentinel may lag a failover).
        let primary = self.client_at(ip, port)?;
        let role = async {
            let mut conn = primary
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::cmd("ROLE").query_async::<Role>(&mut conn).await
        };
        Ok(match tokio::time::timeout_at(deadline, role).await {
            Ok(Ok(Role::Primary { .. })) => Said::Primary(Box::new(primary)),
            Ok(Ok(_)) => Said::NotYet(format!("{ip}:{port} is not a primary now")),
            Ok(Err(e)) => Said::NotYet(format!("{ip}:{port}: {}", unreachable(&e))),
            Err(_) => Said::NotYet(format!("{ip}:{port} {}", late())),
        })
    }

    /// For a Sentinel spec without a name (a node-redis Sentinel client,
    /// whose settings are private): the name of the primary the sentinels
    /// monitor at `hint` (or of the only one they monitor), and every
    /// sentinel they know of. Asked once per spec, then remembered.
    async fn learn_sentinel_name(
        &self,
        s: &SentinelSpec,
        auth: &RedisConnectionInfo,
    ) -> Result<Learned> {
        static LEARNED: LazyLock<Mutex<HashMap<SentinelSpec, Learned>>> =
            LazyLock::new(Mutex::default);
        let cached = LEARNED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(s)
            .cloned();
        if let Some(found) = cached {
            return Ok(found);
        }
        let mut last = String::from("no sentinel answered");
        for (host, port) in &s.nodes {
            match self.ask_sentinel(host, *port, s, auth).await {
                Ok(found) => {
                    let mut learned = LEARNED.lock().unwrap_or_else(|p| p.into_inner());
                    learned.insert(s.clone(), found.clone());
                    return Ok(found);
                }
                Err(e) => last = e.message().to_string(),
            }
        }
        Err(Error::Connection(format!(
            "Sentinel could not tell which primary the node-redis Sentinel client uses: {last}"
        )))
    }

    async fn ask_sentinel(
        &self,
        host: &str,
        port: u16,
        s: &SentinelSpec,
        auth: &RedisConnectionInfo,
    ) -> Result<Learned> {
        let client = redis::Client::open(tcp_info(host, port, None, auth.clone())?)?;
        let within = self.connect_timeout + self.command_timeout;
        let work = async {
            let mut conn = client.get_multiplexed_async_connection().await?;
            let masters: Vec<HashMap<String, String>> = redis::cmd("SENTINEL")
                .arg("MASTERS")
                .query_async(&mut conn)
                .await?;
            let at = |m: &HashMap<String, String>| {
                let addr = (m.get("ip")?.clone(), m.get("port")?.parse::<u16>().ok()?);
                Some(addr)
            };
            let hit = masters
                .iter()
                .find(|m| s.hint.is_some() && at(m) == s.hint)
                .or(match masters.as_slice() {
                    [only] => Some(only),
                    _ => None,
                });
            let Some(name) = hit.and_then(|m| m.get("name")).cloned() else {
                return Err(Error::InvalidArgument(format!(
                    "sentinel {host}:{port} monitors {} primaries, none at the client's: pass {{ sentinels, name }}",
                    masters.len()
                )));
            };
            let peers: Vec<HashMap<String, String>> = redis::cmd("SENTINEL")
                .arg("SENTINELS")
                .arg(&name)
                .query_async(&mut conn)
                .await?;
            let mut nodes = s.nodes.clone();
            for p in peers.iter().filter_map(at) {
                if !nodes.contains(&p) {
                    nodes.push(p);
                }
            }
            Ok((name, nodes))
        };
        tokio::time::timeout(within, work)
            .await
            .map_err(|_| Error::Timeout(format!("sentinel {host}:{port} did not answer in time")))?
    }
}

/// Why a sentinel could not be asked, in a few words.
fn unreachable(e: &redis::RedisError) -> String {
    if e.is_connection_refusal() {
        "connection refused".into()
    } else {
        e.to_string()
    }
}
