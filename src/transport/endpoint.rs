//! Where to connect: an [`Endpoint`] built from a `redis://` / `rediss://`
//! URL and/or explicit fields, validated once, then turned into the `redis`
//! crate's connection settings.

use std::time::Duration;

use redis::{ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo};

use crate::error::{Error, Result};

/// Default bound on establishing a connection (TCP + TLS + AUTH + SELECT).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(2000);
/// Default bound on one command's reply.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_millis(2000);

/// TLS settings, in the shape of Node's `tls.connect` options.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TlsSettings {
    /// PEM bundle to trust instead of the built-in web roots.
    pub ca: Option<String>,
    /// PEM client certificate and key, for mutual TLS.
    pub cert: Option<String>,
    pub key: Option<String>,
    /// Accepted for compatibility; the host name is what gets verified.
    pub servername: Option<String>,
    /// `false` turns certificate verification off (never the default).
    pub reject_unauthorized: bool,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            ca: None,
            cert: None,
            key: None,
            servername: None,
            reject_unauthorized: true,
        }
    }
}

/// What a caller may say about a server; every field optional.
#[derive(Clone, Debug, Default)]
pub struct EndpointSpec {
    pub url: Option<String>,
    pub host: Option<String>,
    pub port: Option<u32>,
    /// A Unix socket path, instead of host and port.
    pub path: Option<String>,
    pub db: Option<i64>,
    pub username: Option<String>,
    pub password: Option<String>,
    /// `Some` turns TLS on (a `rediss://` URL does too).
    pub tls: Option<TlsSettings>,
    pub connect_timeout_ms: Option<u32>,
    pub command_timeout_ms: Option<u32>,
    /// Redis Cluster: seed nodes (`host:port` or `redis://`/`rediss://`
    /// URLs); the other fields give credentials, TLS and timeouts.
    pub cluster: Option<Vec<String>>,
    /// Sentinel: the sentinels (`host:port`) and the primary's name; the
    /// other fields are the primary's database, credentials and TLS.
    pub sentinels: Option<Vec<String>>,
    pub sentinel_name: Option<String>,
    pub sentinel_username: Option<String>,
    pub sentinel_password: Option<String>,
    /// Sentinel without a name: `host:port` of the primary a node-redis
    /// Sentinel client was connected to; the name is asked of the sentinels.
    pub sentinel_primary: Option<String>,
    /// A client with no server we can reach: commands go through relay
    /// `relay` (transport/relay.rs); the other fields say nothing.
    pub relay: Option<u32>,
}

/// Where Sentinel says the primary is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SentinelSpec {
    pub nodes: Vec<(String, u16)>,
    /// The primary's name; empty when it is to be learned (`hint`).
    pub name: String,
    pub username: Option<String>,
    pub password: Option<String>,
    /// With no name: the primary's address when the lock was made.
    pub hint: Option<(String, u16)>,
}

/// Where a server listens.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Address {
    Tcp {
        host: String,
        port: u16,
    },
    /// A Unix domain socket, by path.
    Unix(String),
}

/// One Redis server, database and identity. Two locks whose endpoints are
/// equal share one connection.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub address: Address,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    pub tls: Option<TlsSettings>,
    pub connect_timeout: Duration,
    pub command_timeout: Duration,
    /// Redis Cluster seed nodes (empty: one server at `address`).
    pub cluster: Vec<(String, u16)>,
    /// Sentinel: the primary is found through these (then `address` is
    /// only the first sentinel, for messages).
    pub sentinel: Option<SentinelSpec>,
    /// Commands through a client's own methods (transport/relay.rs).
    pub relay: Option<u32>,
}

impl std::fmt::Debug for Endpoint {
    // Credentials never leave through Debug either.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("address", &self.address)
            .field("db", &self.db)
            .field("username", &self.username.as_ref().map(|_| "<set>"))
            .field("password", &self.password.as_ref().map(|_| "<set>"))
            .field("tls", &self.tls.is_some())
            .field("cluster", &self.cluster)
            .field("relay", &self.relay)
            .field(
                "sentinel",
                &self.sentinel.as_ref().map(|s| (&s.nodes, &s.name)),
            )
            .finish()
    }
}

impl Endpoint {
    /// `host:port/db` or `unix:path/db`, for messages. Holds no credentials.
    pub fn describe(&self) -> String {
        if let Some(id) = self.relay {
            return format!("client relay #{id}");
        }
        if let Some(s) = &self.sentinel {
            let nodes: Vec<String> = s.nodes.iter().map(|(h, p)| format!("{h}:{p}")).collect();
            return format!("sentinel({}@{})/{}", s.name, nodes.join(","), self.db);
        }
        if !self.cluster.is_empty() {
            let nodes: Vec<String> = self
                .cluster
                .iter()
                .map(|(h, p)| format!("{h}:{p}"))
                .collect();
            return format!("cluster({})", nodes.join(","));
        }
        match &self.address {
            Address::Tcp { host, port } => format!("{host}:{port}/{}", self.db),
            Address::Unix(path) => format!("unix:{path}/{}", self.db),
        }
    }

    pub fn resolve(spec: EndpointSpec) -> Result<Endpoint> {
        let mut endpoint = Endpoint {
            address: Address::Tcp {
                host: "127.0.0.1".to_owned(),
                port: 6379,
            },
            db: 0,
            username: None,
            password: None,
            tls: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            cluster: Vec::new(),
            sentinel: None,
            relay: None,
        };
        if let Some(id) = spec.relay {
            endpoint.relay = Some(id);
            if let Some(ms) = spec.command_timeout_ms {
                endpoint.command_timeout = Duration::from_millis(u64::from(ms.max(1)));
            }
            return Ok(endpoint);
        }
        if let Some(url) = spec.url.as_deref() {
            endpoint.apply_url(url)?;
        }
        if let Some(nodes) = spec.cluster.as_deref() {
            endpoint.apply_cluster(nodes)?;
        }
        if let Some(nodes) = spec.sentinels.as_deref() {
            let hint = spec
                .sentinel_primary
                .as_deref()
                .map(|p| host_port(p, "Sentinel primary"))
                .transpose()?;
            let name = spec.sentinel_name.clone().unwrap_or_default();
            if name.is_empty() && hint.is_none() {
                return Err(Error::InvalidArgument(
                    "Sentinel needs the primary's name (name)".into(),
                ));
            }
            let mut seeds = Vec::with_capacity(nodes.len());
            for node in nodes {
                seeds.push(host_port(node, "Sentinel node")?);
            }
            if seeds.is_empty() {
                return Err(Error::InvalidArgument(
                    "Sentinel needs at least one sentinel".into(),
                ));
            }
            let (host, port) = seeds[0].clone();
            endpoint.address = Address::Tcp { host, port };
            endpoint.sentinel = Some(SentinelSpec {
                nodes: seeds,
                name,
                username: spec.sentinel_username.clone().filter(|u| !u.is_empty()),
                password: spec.sentinel_password.clone().filter(|p| !p.is_empty()),
                hint,
            });
        }
        endpoint.apply_address(spec.host, spec.port, spec.path)?;
        if let Some(db) = spec.db {
            if db < 0 {
                return Err(Error::InvalidArgument(format!(
                    "Invalid Redis database {db}: expected 0 or more"
                )));
            }
            endpoint.db = db;
        }
        if spec.username.is_some() {
            endpoint.username = spec.username.filter(|u| !u.is_empty());
        }
        if spec.password.is_some() {
            endpoint.password = spec.password.filter(|p| !p.is_empty());
        }
        if let Some(tls) = spec.tls {
            endpoint.tls = Some(tls);
        }
        if endpoint.tls.is_some() && matches!(endpoint.address, Address::Unix(_)) {
            return Err(Error::InvalidArgument(
                "TLS over a Unix socket is not supported: give host and port for TLS".into(),
            ));
        }
        if let Some(ms) = spec.connect_timeout_ms {
            endpoint.connect_timeout = positive_ms(ms, "connectTimeout")?;
        }
        if let Some(ms) = spec.command_timeout_ms {
            endpoint.command_timeout = positive_ms(ms, "commandTimeout")?;
        }
        Ok(endpoint)
    }

    /// Redis Cluster seed nodes: `host:port`, or URLs whose credentials and
    /// TLS then apply to every node. A cluster has no database but 0.
    fn apply_cluster(&mut self, nodes: &[String]) -> Result<()> {
        if nodes.is_empty() {
            return Err(Error::InvalidArgument(
                "A Redis Cluster needs at least one seed node".into(),
            ));
        }
        let mut seeds = Vec::with_capacity(nodes.len());
        for node in nodes {
            if URL_SCHEMES.iter().any(|s| node.starts_with(s)) {
                self.apply_url(node)?;
                match &self.address {
                    Address::Tcp { host, port } => seeds.push((host.clone(), *port)),
                    Address::Unix(_) => {
                        return Err(Error::InvalidArgument(
                            "A Redis Cluster node cannot be a Unix socket".into(),
                        ))
                    }
                }
                continue;
            }
            seeds.push(host_port(node, "Redis Cluster node")?);
        }
        if self.db != 0 {
            return Err(Error::InvalidArgument(
                "Redis Cluster has only database 0".into(),
            ));
        }
        let (host, port) = seeds[0].clone();
        self.address = Address::Tcp { host, port };
        self.cluster = seeds;
        Ok(())
    }

    /// A `redis::cluster::ClusterClient` for a cluster endpoint.
    pub(crate) fn cluster_client(&self) -> Result<redis::cluster::ClusterClient> {
        build_cluster(self.cluster_builder()?)
    }

    /// A cluster client for sharded pub/sub: RESP3, pushes sent to `tx`.
    pub(crate) fn cluster_subscriber(
        &self,
        tx: tokio::sync::mpsc::UnboundedSender<redis::PushInfo>,
    ) -> Result<redis::cluster::ClusterClient> {
        let b = self.cluster_builder()?;
        build_cluster(
            b.use_protocol(redis::ProtocolVersion::RESP3)
                .push_sender(tx),
        )
    }

    fn cluster_builder(&self) -> Result<redis::cluster::ClusterClientBuilder> {
        let seeds = self
            .cluster
            .iter()
            .map(|(h, p)| tcp_info(h, *p, self.tls.as_ref(), self.redis_settings()))
            .collect::<Result<Vec<_>>>()?;
        let mut b = redis::cluster::ClusterClientBuilder::new(seeds)
            .connection_timeout(self.connect_timeout)
            .response_timeout(self.command_timeout)
            .retries(2);
        if let Some(user) = &self.username {
            b = b.username(user);
        }
        if let Some(pass) = &self.password {
            b = b.password(pass);
        }
        if let Some(tls) = &self.tls {
            b = b.tls(if tls.reject_unauthorized {
                redis::TlsMode::Secure
            } else {
                redis::TlsMode::Insecure
            });
            if let Some(certs) = custom_certs(tls)? {
                b = b.certs(certs);
            }
        }
        Ok(b)
    }

    /// Explicit `host`/`port` (TCP) or `path` (Unix socket) over what the URL said.
    fn apply_address(
        &mut self,
        host: Option<String>,
        port: Option<u32>,
        path: Option<String>,
    ) -> Result<()> {
        if let Some(path) = path {
            if host.is_some() || port.is_some() {
                return Err(Error::InvalidArgument(
                    "Give either a Unix socket path or host and port, not both".into(),
                ));
            }
            if path.is_empty() {
                return Err(Error::InvalidArgument(
                    "Redis socket path must not be empty".into(),
                ));
            }
            self.address = Address::Unix(path);
            return Ok(());
        }
        if host.is_none() && port.is_none() {
            return Ok(());
        }
        let (mut new_host, mut new_port) = match &self.address {
            Address::Tcp { host, port } => (host.clone(), *port),
            Address::Unix(_) => {
                return Err(Error::InvalidArgument(
                    "Give either a Unix socket URL or host and port, not both".into(),
                ))
            }
        };
        if let Some(host) = host {
            if host.is_empty() {
                return Err(Error::InvalidArgument(
                    "Redis host must not be empty".into(),
                ));
            }
            new_host = host;
        }
        if let Some(port) = port {
            new_port = u16::try_from(port)
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!("Invalid Redis port {port}: expected 1-65535"))
                })?;
        }
        self.address = Address::Tcp {
            host: new_host,
            port: new_port,
        };
        Ok(())
    }

    fn apply_url(&mut self, url: &str) -> Result<()> {
        // Never echo the URL: it may carry a password.
        if !URL_SCHEMES.iter().any(|scheme| url.starts_with(scheme)) {
            return Err(Error::InvalidArgument(
                "Invalid Redis URL: expected redis://[[user]:password@]host[:port][/db], rediss://..., \
                 or unix:///path/to/socket[?db=N] (also redis+unix://)"
                    .into(),
            ));
        }
        let info = url.into_connection_info().map_err(|_| {
            Error::InvalidArgument("Invalid Redis URL: it could not be parsed".into())
        })?;
        match info.addr() {
            ConnectionAddr::Tcp(host, port) => {
                self.address = Address::Tcp {
                    host: strip_brackets(host),
                    port: *port,
                };
            }
            ConnectionAddr::Unix(path) => {
                let path = path.to_str().ok_or_else(|| {
                    Error::InvalidArgument("Invalid Redis URL: socket path is not UTF-8".into())
                })?;
                self.address = Address::Unix(path.to_owned());
            }
            ConnectionAddr::TcpTls {
                host,
                port,
                insecure,
                ..
            } => {
                self.address = Address::Tcp {
                    host: strip_brackets(host),
                    port: *port,
                };
                self.tls = Some(TlsSettings {
                    reject_unauthorized: !*insecure,
                    ..TlsSettings::default()
                });
            }
            _ => {
                return Err(Error::InvalidArgument(
                    "Invalid Redis URL: unsupported address".into(),
                ))
            }
        }
        let redis = info.redis_settings();
        self.db = redis.db();
        self.username = redis.username().map(str::to_owned);
        self.password = redis.password().map(str::to_owned);
        Ok(())
    }

    /// The `redis` crate's view of this endpoint (TCP_NODELAY on).
    pub(crate) fn connection_info(&self) -> Result<redis::ConnectionInfo> {
        match &self.address {
            Address::Unix(path) => {
                node_info(ConnectionAddr::Unix(path.into()), self.redis_settings())
            }
            Address::Tcp { host, port } => {
                tcp_info(host, *port, self.tls.as_ref(), self.redis_settings())
            }
        }
    }

    /// Database and credentials, as the `redis` crate takes them.
    fn redis_settings(&self) -> RedisConnectionInfo {
        let mut redis = RedisConnectionInfo::default()
            .set_db(self.db)
            .set_skip_set_lib_name();
        if let Some(user) = &self.username {
            redis = redis.set_username(user);
        }
        if let Some(pass) = &self.password {
            redis = redis.set_password(pass);
        }
        redis
    }

    /// A `redis::Client` for this endpoint, with custom TLS roots and client
    /// certificates when given.
    pub(crate) fn client(&self) -> Result<redis::Client> {
        self.client_for(self.connection_info()?)
    }

    /// A `redis::Client` for the server at `host:port` (the primary Sentinel
    /// names) with this endpoint's database, credentials and TLS.
    pub(crate) fn client_at(&self, host: &str, port: u16) -> Result<redis::Client> {
        self.client_for(tcp_info(
            host,
            port,
            self.tls.as_ref(),
            self.redis_settings(),
        )?)
    }

    fn client_for(&self, info: redis::ConnectionInfo) -> Result<redis::Client> {
        let client = match self.tls.as_ref().map(custom_certs).transpose()?.flatten() {
            None => redis::Client::open(info),
            Some(certs) => redis::Client::build_with_tls(info, certs),
        };
        // The detail of a TLS/PEM parse error holds no credentials.
        client
            .map_err(|e| Error::InvalidArgument(format!("Invalid Redis connection settings: {e}")))
    }
}

/// The custom TLS roots and client certificate of `tls`, as the `redis`
/// crate takes them; `None` when neither is given (the system's roots).
fn custom_certs(tls: &TlsSettings) -> Result<Option<redis::TlsCertificates>> {
    if tls.ca.is_none() && tls.cert.is_none() && tls.key.is_none() {
        return Ok(None);
    }
    let client_tls = match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
            client_cert: cert.clone().into_bytes(),
            client_key: key.clone().into_bytes(),
        }),
        (None, None) => None,
        _ => {
            return Err(Error::InvalidArgument(
                "TLS client certificate and key must be given together".into(),
            ))
        }
    };
    Ok(Some(redis::TlsCertificates {
        client_tls,
        root_cert: tls.ca.clone().map(String::into_bytes),
    }))
}

fn build_cluster(b: redis::cluster::ClusterClientBuilder) -> Result<redis::cluster::ClusterClient> {
    b.build()
        .map_err(|e| Error::InvalidArgument(format!("Invalid Redis Cluster settings: {e}")))
}

/// A TCP node (TLS when `tls`) with `redis` settings, TCP_NODELAY on.
pub(crate) fn tcp_info(
    host: &str,
    port: u16,
    tls: Option<&TlsSettings>,
    redis: RedisConnectionInfo,
) -> Result<redis::ConnectionInfo> {
    let addr = match tls {
        None => ConnectionAddr::Tcp(host.to_owned(), port),
        Some(tls) => ConnectionAddr::TcpTls {
            host: host.to_owned(),
            port,
            insecure: !tls.reject_unauthorized,
            tls_params: None,
        },
    };
    node_info(addr, redis)
}

fn node_info(addr: ConnectionAddr, redis: RedisConnectionInfo) -> Result<redis::ConnectionInfo> {
    Ok(addr
        .into_connection_info()
        .map_err(|e| Error::InvalidArgument(format!("Invalid Redis address: {e}")))?
        .set_redis_settings(redis)
        .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true)))
}

/// `host:port` (IPv6 hosts in brackets), checked.
fn host_port(node: &str, what: &str) -> Result<(String, u16)> {
    let (host, port) = node
        .rsplit_once(':')
        .ok_or_else(|| Error::InvalidArgument(format!("Invalid {what}: expected host:port")))?;
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| Error::InvalidArgument(format!("Invalid {what} port {port:?}")))?;
    if host.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{what} host must not be empty"
        )));
    }
    Ok((strip_brackets(host), port))
}

/// URL schemes `createLock` accepts, as the Node clients spell them.
const URL_SCHEMES: [&str; 4] = ["redis://", "rediss://", "unix://", "redis+unix://"];

fn strip_brackets(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned()
}

fn positive_ms(ms: u32, name: &str) -> Result<Duration> {
    if ms == 0 {
        return Err(Error::InvalidArgument(format!(
            "Invalid {name} 0: expected a positive number of milliseconds"
        )));
    }
    Ok(Duration::from_millis(u64::from(ms)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Address {
        Address::Tcp {
            host: host.into(),
            port,
        }
    }

    fn spec_url(url: &str) -> EndpointSpec {
        EndpointSpec {
            url: Some(url.into()),
            ..EndpointSpec::default()
        }
    }

    #[test]
    fn defaults_to_localhost() {
        let e = Endpoint::resolve(EndpointSpec::default()).unwrap();
        assert_eq!(e.address, tcp("127.0.0.1", 6379));
        assert_eq!(e.db, 0);
        assert!(e.tls.is_none());
        assert_eq!(e.command_timeout, DEFAULT_COMMAND_TIMEOUT);
    }

    #[test]
    fn parses_full_url() {
        let e = Endpoint::resolve(spec_url("redis://alice:s3cret@example.com:6380/4")).unwrap();
        assert_eq!(e.address, tcp("example.com", 6380));
        assert_eq!(e.db, 4);
        assert_eq!(e.username.as_deref(), Some("alice"));
        assert_eq!(e.password.as_deref(), Some("s3cret"));
        assert!(!format!("{e:?}").contains("s3cret"));
        assert!(!e.describe().contains("s3cret"));
    }

    #[test]
    fn rediss_turns_tls_on_with_verification() {
        let e = Endpoint::resolve(spec_url("rediss://h:7000")).unwrap();
        let tls = e.tls.expect("tls");
        assert!(tls.reject_unauthorized);
    }

    #[test]
    fn fields_override_url() {
        let spec = EndpointSpec {
            port: Some(7001),
            db: Some(2),
            ..spec_url("redis://h:7000/1")
        };
        let e = Endpoint::resolve(spec).unwrap();
        assert_eq!((e.address, e.db), (tcp("h", 7001), 2));
    }

    #[test]
    fn unix_socket_from_url_or_path() {
        for url in [
            "unix:///run/redis.sock?db=3&pass=s3cret",
            "redis+unix:///run/redis.sock?db=3&pass=s3cret",
        ] {
            let e = Endpoint::resolve(spec_url(url)).unwrap();
            assert_eq!(e.address, Address::Unix("/run/redis.sock".into()), "{url}");
            assert_eq!(e.db, 3);
            assert_eq!(e.password.as_deref(), Some("s3cret"));
            assert_eq!(e.describe(), "unix:/run/redis.sock/3");
        }
        let e = Endpoint::resolve(EndpointSpec {
            path: Some("/tmp/r.sock".into()),
            db: Some(2),
            ..EndpointSpec::default()
        })
        .unwrap();
        assert_eq!((e.address, e.db), (Address::Unix("/tmp/r.sock".into()), 2));
    }

    #[test]
    fn unix_socket_conflicts_are_refused() {
        let both = EndpointSpec {
            path: Some("/tmp/r.sock".into()),
            host: Some("h".into()),
            ..EndpointSpec::default()
        };
        assert!(Endpoint::resolve(both).is_err());
        let url_and_port = EndpointSpec {
            port: Some(7000),
            ..spec_url("unix:///tmp/r.sock")
        };
        assert!(Endpoint::resolve(url_and_port).is_err());
        let tls = EndpointSpec {
            path: Some("/tmp/r.sock".into()),
            tls: Some(TlsSettings::default()),
            ..EndpointSpec::default()
        };
        assert!(Endpoint::resolve(tls).is_err());
        let empty = EndpointSpec {
            path: Some(String::new()),
            ..EndpointSpec::default()
        };
        assert!(Endpoint::resolve(empty).is_err());
    }

    #[test]
    fn rejects_bad_input_without_echoing_secrets() {
        for url in ["http://user:hunter2@h", "redis://user:hunter2@h:99999999"] {
            let err = Endpoint::resolve(spec_url(url)).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{url}");
            assert!(!err.message().contains("hunter2"), "{}", err.message());
        }
        let bad_port = EndpointSpec {
            port: Some(70000),
            ..EndpointSpec::default()
        };
        assert!(Endpoint::resolve(bad_port).is_err());
        let bad_db = EndpointSpec {
            db: Some(-1),
            ..EndpointSpec::default()
        };
        assert!(Endpoint::resolve(bad_db).is_err());
        let bad_timeout = EndpointSpec {
            command_timeout_ms: Some(0),
            ..EndpointSpec::default()
        };
        assert!(Endpoint::resolve(bad_timeout).is_err());
    }

    #[test]
    fn equal_settings_make_equal_endpoints() {
        let a = Endpoint::resolve(spec_url("redis://127.0.0.1:6390/3")).unwrap();
        let b = Endpoint::resolve(EndpointSpec {
            port: Some(6390),
            db: Some(3),
            ..EndpointSpec::default()
        })
        .unwrap();
        assert_eq!(a, b);
        let c = Endpoint::resolve(EndpointSpec {
            port: Some(6390),
            db: Some(4),
            ..EndpointSpec::default()
        })
        .unwrap();
        assert_ne!(a, c);
    }
}
