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
    pub db: Option<i64>,
    pub username: Option<String>,
    pub password: Option<String>,
    /// `Some` turns TLS on (a `rediss://` URL does too).
    pub tls: Option<TlsSettings>,
    pub connect_timeout_ms: Option<u32>,
    pub command_timeout_ms: Option<u32>,
}

/// One Redis server, database and identity. Two locks whose endpoints are
/// equal share one connection.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    pub tls: Option<TlsSettings>,
    pub connect_timeout: Duration,
    pub command_timeout: Duration,
}

impl std::fmt::Debug for Endpoint {
    // Credentials never leave through Debug either.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("db", &self.db)
            .field("username", &self.username.as_ref().map(|_| "<set>"))
            .field("password", &self.password.as_ref().map(|_| "<set>"))
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Endpoint {
    /// `host:port/db`, for messages. Holds no credentials.
    pub fn describe(&self) -> String {
        format!("{}:{}/{}", self.host, self.port, self.db)
    }

    pub fn resolve(spec: EndpointSpec) -> Result<Endpoint> {
        let mut endpoint = Endpoint {
            host: "127.0.0.1".to_owned(),
            port: 6379,
            db: 0,
            username: None,
            password: None,
            tls: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
        };
        if let Some(url) = spec.url.as_deref() {
            endpoint.apply_url(url)?;
        }
        if let Some(host) = spec.host {
            if host.is_empty() {
                return Err(Error::InvalidArgument(
                    "Redis host must not be empty".into(),
                ));
            }
            endpoint.host = host;
        }
        if let Some(port) = spec.port {
            endpoint.port = u16::try_from(port)
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!("Invalid Redis port {port}: expected 1-65535"))
                })?;
        }
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
        if let Some(ms) = spec.connect_timeout_ms {
            endpoint.connect_timeout = positive_ms(ms, "connectTimeout")?;
        }
        if let Some(ms) = spec.command_timeout_ms {
            endpoint.command_timeout = positive_ms(ms, "commandTimeout")?;
        }
        Ok(endpoint)
    }

    fn apply_url(&mut self, url: &str) -> Result<()> {
        // Never echo the URL: it may carry a password.
        let scheme_ok = url.starts_with("redis://") || url.starts_with("rediss://");
        if !scheme_ok {
            return Err(Error::InvalidArgument(
                "Invalid Redis URL: expected redis://[[user]:password@]host[:port][/db] or rediss://...".into(),
            ));
        }
        let info = url.into_connection_info().map_err(|_| {
            Error::InvalidArgument("Invalid Redis URL: it could not be parsed".into())
        })?;
        match info.addr() {
            ConnectionAddr::Tcp(host, port) => {
                self.host = strip_brackets(host);
                self.port = *port;
            }
            ConnectionAddr::TcpTls {
                host,
                port,
                insecure,
                ..
            } => {
                self.host = strip_brackets(host);
                self.port = *port;
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
        let addr = match &self.tls {
            None => ConnectionAddr::Tcp(self.host.clone(), self.port),
            Some(tls) => ConnectionAddr::TcpTls {
                host: self.host.clone(),
                port: self.port,
                insecure: !tls.reject_unauthorized,
                tls_params: None,
            },
        };
        let mut redis = RedisConnectionInfo::default()
            .set_db(self.db)
            .set_skip_set_lib_name();
        if let Some(user) = &self.username {
            redis = redis.set_username(user);
        }
        if let Some(pass) = &self.password {
            redis = redis.set_password(pass);
        }
        let info = addr
            .into_connection_info()
            .map_err(|e| Error::InvalidArgument(format!("Invalid Redis address: {e}")))?
            .set_redis_settings(redis)
            .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
        Ok(info)
    }

    /// A `redis::Client` for this endpoint, with custom TLS roots and client
    /// certificates when given.
    pub(crate) fn client(&self) -> Result<redis::Client> {
        let info = self.connection_info()?;
        let custom_tls = self
            .tls
            .as_ref()
            .filter(|t| t.ca.is_some() || t.cert.is_some() || t.key.is_some());
        let client = match custom_tls {
            None => redis::Client::open(info),
            Some(tls) => {
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
                let certs = redis::TlsCertificates {
                    client_tls,
                    root_cert: tls.ca.clone().map(String::into_bytes),
                };
                redis::Client::build_with_tls(info, certs)
            }
        };
        // The detail of a TLS/PEM parse error holds no credentials.
        client
            .map_err(|e| Error::InvalidArgument(format!("Invalid Redis connection settings: {e}")))
    }
}

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

    fn spec_url(url: &str) -> EndpointSpec {
        EndpointSpec {
            url: Some(url.into()),
            ..EndpointSpec::default()
        }
    }

    #[test]
    fn defaults_to_localhost() {
        let e = Endpoint::resolve(EndpointSpec::default()).unwrap();
        assert_eq!((e.host.as_str(), e.port, e.db), ("127.0.0.1", 6379, 0));
        assert!(e.tls.is_none());
        assert_eq!(e.command_timeout, DEFAULT_COMMAND_TIMEOUT);
    }

    #[test]
    fn parses_full_url() {
        let e = Endpoint::resolve(spec_url("redis://alice:s3cret@example.com:6380/4")).unwrap();
        assert_eq!(e.host, "example.com");
        assert_eq!(e.port, 6380);
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
        assert_eq!((e.port, e.db), (7001, 2));
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
