//! [`connect`] and [`connect_async`]: a backend chosen by URL.

use leader_core::__private::{unparsed_url, url_scheme};

use crate::any::AnyBackend;
use crate::error::ConnectError;

/// Every URL scheme [`connect`] knows (some need a feature).
pub(crate) const SCHEMES: &[&str] = &[
    "memory",
    "redis",
    "rediss",
    "redis+cluster",
    "rediss+cluster",
    "redis+sentinel",
    "rediss+sentinel",
    "mongodb",
    "mongodb+srv",
    "sqlite",
    "postgres",
    "postgresql",
    "etcd",
    "etcds",
];

/// A backend for `url`, usable with every elector, blocking or async.
///
/// | URL | backend | feature |
/// |---|---|---|
/// | `memory://` | a new [`InMemoryBackend`](crate::InMemoryBackend) (this process only) | — |
/// | `redis://[user:password@]host[:port][/db]` | [`RedisBackend`](crate::RedisBackend), one server | `redis` |
/// | `rediss://...` | the same over TLS | `redis-tls` |
/// | `redis+cluster://[user:password@]host1:port1,host2:port2` | a Redis Cluster, reached through any listed node | `redis` |
/// | `rediss+cluster://...` | the same over TLS | `redis-tls` |
/// | `redis+sentinel://[user:password@]host[:port][,host[:port]...]/master-name[/db]` | the master of a set managed by Redis Sentinel, found through the listed sentinels (port 26379 by default) and followed across failovers; the credentials are the servers' | `redis` |
/// | `rediss+sentinel://...` | the same over TLS (sentinels and servers) | `redis-tls` |
/// | `mongodb://...`, `mongodb+srv://...` | [`MongoBackend`](crate::MongoBackend), any MongoDB connection string | `mongodb` |
/// | `sqlite://path/to/locks.db` (relative), `sqlite:///var/lib/app/locks.db` (absolute) | `SqliteBackend`: one file shared by the processes of a host; created if missing | `sqlite` |
/// | `postgres://[user[:password]@]host[:port]/db[?...]`, `postgresql://...` | `PostgresBackend`: table `leader_locks`, created on first use | `postgres` |
/// | `postgres://...?sslmode=require` | the same over TLS, the certificate verified | `postgres-tls` |
/// | `postgres://[user[:password]@]h1:p1,h2:p2/db[?...]` | the same on whichever host takes writes (a primary and its standbys: after a promotion, the new primary); every session is `target_session_attrs=read-write`, written or not | `postgres` |
/// | `etcd://[user[:password]@]host[:port][,host[:port]...][/prefix]` | `EtcdBackend`: the cluster's members, keys under `leader/` (or the prefix) | `etcd` |
/// | `etcds://...` | the same over TLS, the certificates verified | `etcd-tls` |
///
/// Nothing is sent to a server here: connections open on first use, so the server may
/// start after the application, and an unreachable server shows up as a transient
/// [`Error::Backend`](crate::Error::Backend) from the first call that needs it. Each
/// `memory://` backend is a separate store; clone the backend to share it.
///
/// `rediss://` trusts the platform's root certificates (and the files named by
/// `SSL_CERT_FILE` / `SSL_CERT_DIR`); for a private CA, build the backend with
/// `RedisBackend::connect_with(url, RedisConfig::new().with_tls_root_certificate(pem))` and
/// convert it with `.into()`.
///
/// A `mongodb+srv://` name is resolved here, blocking the thread for that lookup: from async
/// code, prefer [`connect_async`].
///
/// # Errors
///
/// A [`ConnectError`] naming the problem, the URL shown with its password masked: not a
/// URL, an unknown scheme, a scheme whose feature is off, or a URL the backend rejects.
///
/// # Examples
///
/// ```
/// use leader::{ConnectError, LeaderElectionOptions, LeaderElector};
///
/// let url = std::env::var("LEADER_URL").unwrap_or_else(|_| "memory://".into());
/// let elector = LeaderElector::new(leader::connect(&url)?, LeaderElectionOptions::default())?;
/// # let _ = elector;
///
/// let err = leader::connect("mysql://app:hunter2@db/app").unwrap_err();
/// assert!(matches!(err, ConnectError::UnknownScheme { .. }));
/// assert!(!err.to_string().contains("hunter2"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn connect(url: &str) -> Result<AnyBackend, ConnectError> {
    match Target::parse(url)?.enabled()? {
        Target::Memory => Ok(AnyBackend::Memory(leader_core::InMemoryBackend::new())),
        #[cfg(feature = "redis")]
        Target::Redis { url, .. } => {
            Ok(AnyBackend::Redis(leader_redis::RedisBackend::connect(url)?))
        }
        #[cfg(feature = "redis")]
        Target::RedisCluster { nodes, .. } => Ok(AnyBackend::Redis(
            leader_redis::RedisBackend::connect_cluster(nodes, leader_redis::RedisConfig::new())?,
        )),
        #[cfg(feature = "mongodb")]
        Target::Mongo { uri, .. } => leader_mongodb::MongoBackend::connect(uri)
            .map(AnyBackend::Mongo)
            .map_err(|source| mongo_error(uri, source)),
        #[cfg(feature = "sqlite")]
        Target::Sqlite { path } => Ok(AnyBackend::Sqlite(leader_sqlite::SqliteBackend::open(
            path,
        )?)),
        #[cfg(feature = "postgres")]
        Target::Postgres { url, .. } => leader_postgres::PostgresBackend::connect(url)
            .map(AnyBackend::Postgres)
            .map_err(|source| ConnectError::Postgres {
                url: leader_postgres::redacted_url(url),
                source,
            }),
        #[cfg(feature = "etcd")]
        Target::Etcd { url, .. } => leader_etcd::EtcdBackend::connect(url)
            .map(AnyBackend::Etcd)
            .map_err(|source| ConnectError::Etcd {
                url: leader_etcd::redacted_url(url),
                source,
            }),
        // `enabled` refused every target whose feature is off.
        #[allow(unreachable_patterns)]
        _ => Err(invalid(url, "this backend is not built in")),
    }
}

/// [`connect`] for async code: the same URLs and errors, and a `mongodb+srv://` name is
/// resolved without blocking the caller's thread. Works on every runtime.
///
/// # Errors
///
/// As for [`connect`].
///
/// # Examples
///
/// ```
/// use leader::{AsyncLeaderElector, LeaderElectionOptions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let backend = leader::connect_async("memory://").await?;
/// let elector = AsyncLeaderElector::new(backend, LeaderElectionOptions::default())?;
/// let ran = elector.run_if_leader("rebalance", || async { "done" }).await?;
/// assert_eq!(ran, Some("done"));
/// # Ok(())
/// # }
/// ```
pub async fn connect_async(url: &str) -> Result<AnyBackend, ConnectError> {
    match Target::parse(url)?.enabled()? {
        #[cfg(feature = "mongodb")]
        Target::Mongo { uri, .. } => {
            leader_mongodb::MongoBackend::connect_async(uri, leader_mongodb::MongoConfig::new())
                .await
                .map(AnyBackend::Mongo)
                .map_err(|source| mongo_error(uri, source))
        }
        #[cfg(feature = "sqlite")]
        Target::Sqlite { path } => Ok(AnyBackend::Sqlite(
            leader_sqlite::SqliteBackend::open_async(path, leader_sqlite::SqliteConfig::new())
                .await?,
        )),
        // The other backends do no I/O when built.
        _ => connect(url),
    }
}

#[cfg(feature = "mongodb")]
fn mongo_error(uri: &str, source: leader_mongodb::ConnectError) -> ConnectError {
    ConnectError::Mongo {
        url: leader_mongodb::redacted_url(uri),
        source,
    }
}

/// `url`'s scheme is known but the rest is wrong for `connect` itself (before any driver
/// parsed it): only the scheme is shown.
fn invalid(url: &str, reason: &'static str) -> ConnectError {
    ConnectError::InvalidUrl {
        url: unparsed_url(url),
        reason,
    }
}

/// `url` as [`connect`]'s errors show it, and as an application may log it: rebuilt from
/// what the backend's driver parses (scheme, user, hosts, ports, database; a given password
/// as `***`), so no password is shown however it is written, percent-encoded or not. A URL
/// the driver does not parse, or of a backend not built in, shows only its scheme
/// (`redis://…`); text that is not a URL shows nothing (`…`). SQLite and memory URLs hold
/// no secret and are shown as given.
///
/// Why rebuild rather than mask: each driver ends the user info somewhere else when a
/// password was not percent-encoded (redis-rs at the last `@` before the first `/`, `?` or
/// `#`; tokio-postgres at the first `@` anywhere; MongoDB at the last `@` before the
/// options), so a mask that reads the URL one way shows a password that another reads.
///
/// # Examples
///
/// ```
/// assert_eq!(leader::redacted_url("memory://"), "memory://");
/// assert_eq!(leader::redacted_url("host=db password=s3cret"), "…");
/// # #[cfg(feature = "redis")]
/// assert_eq!(leader::redacted_url("redis://:pa#ss@127.0.0.1/"), "redis://…");
/// # #[cfg(feature = "redis")]
/// assert_eq!(
///     leader::redacted_url("redis+cluster://:s3cret@127.0.0.1:7000,127.0.0.1:7001"),
///     "redis+cluster://:***@127.0.0.1:7000,127.0.0.1:7001"
/// );
/// # #[cfg(feature = "redis")]
/// assert_eq!(
///     leader::redacted_url("redis+sentinel://:s3cret@10.0.0.1,10.0.0.2/orders"),
///     "redis+sentinel://:***@10.0.0.1:26379,10.0.0.2:26379/orders/0"
/// );
/// # #[cfg(feature = "postgres")]
/// assert_eq!(
///     leader::redacted_url("postgres://app:pa/ss@127.0.0.1:1/app"),
///     "postgres://app:***@127.0.0.1:1/app"
/// );
/// ```
pub fn redacted_url(url: &str) -> String {
    let Ok(target) = Target::parse(url).and_then(Target::enabled) else {
        return unparsed_url(url);
    };
    match target {
        Target::Memory => "memory://".to_owned(),
        #[cfg(feature = "redis")]
        Target::Redis { url, .. } => leader_redis::redacted_url(url),
        #[cfg(feature = "redis")]
        Target::RedisCluster { nodes, .. } => {
            // Each node as the driver parsed it; the nodes share the user info.
            let scheme = url_scheme(url)
                .unwrap_or("redis+cluster")
                .to_ascii_lowercase();
            let shown: Vec<String> = nodes
                .iter()
                .map(|n| leader_redis::redacted_url(n))
                .collect();
            let mut auth = "";
            let mut hosts = Vec::with_capacity(shown.len());
            for node in &shown {
                let Some((_, rest)) = node.split_once("://").filter(|(_, rest)| *rest != "…")
                else {
                    return unparsed_url(url);
                };
                let authority = rest.split('/').next().unwrap_or(rest);
                let (user_info, host) = match authority.rfind('@') {
                    Some(at) => authority.split_at(at + 1),
                    None => ("", authority),
                };
                auth = user_info;
                hosts.push(host);
            }
            let text = format!("{scheme}://{auth}{}", hosts.join(","));
            leader_core::UrlSecrets::from_url(url)
                .mask(&text)
                .into_owned()
        }
        #[cfg(feature = "mongodb")]
        Target::Mongo { uri, .. } => leader_mongodb::redacted_url(uri),
        #[cfg(feature = "sqlite")]
        Target::Sqlite { path } => format!("sqlite://{path}"),
        #[cfg(feature = "postgres")]
        Target::Postgres { url, .. } => leader_postgres::redacted_url(url),
        #[cfg(feature = "etcd")]
        Target::Etcd { url, .. } => leader_etcd::redacted_url(url),
        #[allow(unreachable_patterns)]
        _ => unparsed_url(url),
    }
}

/// What a URL asks for. Parsing does not depend on the features this crate was built
/// with; [`Target::enabled`] checks them.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    Memory,
    Redis { url: &'a str, tls: bool },
    RedisCluster { nodes: Vec<String>, tls: bool },
    Mongo { uri: &'a str, srv: bool },
    Sqlite { path: &'a str },
    Postgres { url: &'a str, tls: bool },
    Etcd { url: &'a str, tls: bool },
}

impl<'a> Target<'a> {
    fn parse(url: &'a str) -> Result<Self, ConnectError> {
        let url = url.trim();
        // What stands before a `://` in a `key=value` string (`password=x options=a://b`)
        // is no scheme, and may hold a password.
        let Some((scheme, rest)) = url_scheme(url).and_then(|_| url.split_once("://")) else {
            return Err(ConnectError::NotAUrl);
        };
        match scheme.to_ascii_lowercase().as_str() {
            "memory" if rest.is_empty() || rest == "/" => Ok(Target::Memory),
            "memory" => Err(invalid(url, "`memory://` takes no host, path or options")),
            "redis" => Ok(Target::Redis { url, tls: false }),
            "rediss" => Ok(Target::Redis { url, tls: true }),
            "redis+cluster" => cluster(url, rest, "redis", false),
            "rediss+cluster" => cluster(url, rest, "rediss", true),
            // The Redis backend parses Sentinel URLs itself (`RedisBackend::connect`).
            "redis+sentinel" => Ok(Target::Redis { url, tls: false }),
            "rediss+sentinel" => Ok(Target::Redis { url, tls: true }),
            "mongodb" => Ok(Target::Mongo {
                uri: url,
                srv: false,
            }),
            "mongodb+srv" => Ok(Target::Mongo {
                uri: url,
                srv: true,
            }),
            "sqlite" if rest.is_empty() => Err(invalid(url, "`sqlite://` needs a file path")),
            "sqlite" => Ok(Target::Sqlite { path: rest }),
            "postgres" | "postgresql" => Ok(Target::Postgres {
                url,
                tls: requires_tls(rest),
            }),
            "etcd" => Ok(Target::Etcd { url, tls: false }),
            "etcds" => Ok(Target::Etcd { url, tls: true }),
            _ => Err(ConnectError::UnknownScheme {
                scheme: scheme.to_owned(),
                url: unparsed_url(url),
            }),
        }
    }

    /// The target, or the feature it needs when that is off.
    fn enabled(self) -> Result<Self, ConnectError> {
        let needs = |scheme, feature| Err(ConnectError::FeatureDisabled { scheme, feature });
        match &self {
            Target::Redis { tls: false, .. } | Target::RedisCluster { tls: false, .. }
                if !cfg!(feature = "redis") =>
            {
                needs("redis", "redis")
            }
            Target::Redis { tls: true, .. } | Target::RedisCluster { tls: true, .. }
                if !cfg!(feature = "redis-tls") =>
            {
                needs("rediss", "redis-tls")
            }
            Target::Mongo { srv, .. } if !cfg!(feature = "mongodb") => {
                needs(if *srv { "mongodb+srv" } else { "mongodb" }, "mongodb")
            }
            Target::Sqlite { .. } if !cfg!(feature = "sqlite") => needs("sqlite", "sqlite"),
            Target::Postgres { tls: false, .. } if !cfg!(feature = "postgres") => {
                needs("postgres", "postgres")
            }
            Target::Postgres { tls: true, .. } if !cfg!(feature = "postgres-tls") => {
                needs("postgres", "postgres-tls")
            }
            Target::Etcd { tls: false, .. } if !cfg!(feature = "etcd") => needs("etcd", "etcd"),
            Target::Etcd { tls: true, .. } if !cfg!(feature = "etcd-tls") => {
                needs("etcds", "etcd-tls")
            }
            _ => Ok(self),
        }
    }
}

/// Whether a PostgreSQL URL's query asks for TLS (`sslmode=require`).
fn requires_tls(rest: &str) -> bool {
    rest.split_once('?').is_some_and(|(_, query)| {
        query
            .split('&')
            .any(|pair| pair.eq_ignore_ascii_case("sslmode=require"))
    })
}

/// `redis+cluster://[userinfo@]h1:p1,h2:p2[/db][?query]` → one `redis://` URL per node,
/// each with the same user info, path and query.
fn cluster<'a>(
    url: &'a str,
    rest: &str,
    node_scheme: &str,
    tls: bool,
) -> Result<Target<'a>, ConnectError> {
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let (user_info, hosts) = match authority.rfind('@') {
        Some(at) => (&authority[..=at], &authority[at + 1..]),
        None => ("", authority),
    };
    if hosts.is_empty() {
        return Err(invalid(url, "a cluster URL needs at least one `host:port`"));
    }
    let nodes = hosts
        .split(',')
        .map(|host| match host.trim() {
            "" => Err(invalid(url, "an empty host in the cluster's node list")),
            host => Ok(format!("{node_scheme}://{user_info}{host}{tail}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Target::RedisCluster { nodes, tls })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<Target<'_>, ConnectError> {
        Target::parse(url)
    }

    #[test]
    fn memory_urls() {
        assert_eq!(parse("memory://").ok(), Some(Target::Memory));
        assert_eq!(parse("MEMORY:///").ok(), Some(Target::Memory));
        assert!(matches!(
            parse("memory://somewhere"),
            Err(ConnectError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn not_urls_and_unknown_schemes_mask_the_password() {
        for text in ["", "127.0.0.1:6379", "redis:/host"] {
            assert!(matches!(parse(text), Err(ConnectError::NotAUrl)), "{text}");
        }
        let err = parse("mysql://app:hunter2@db/app").unwrap_err();
        assert!(matches!(&err, ConnectError::UnknownScheme { scheme, .. } if scheme == "mysql"));
        let text = err.to_string();
        assert!(text.contains("`mysql://…`"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        // A `key=value` string is not a URL, even with a `://` after its password.
        let err = parse("host=db password=hunter2 options=a://b").unwrap_err();
        assert!(matches!(&err, ConnectError::NotAUrl), "{err}");
        // Almost a URL: the error repeats it, without the password.
        let err = parse("redis:/app:hunter2@db/").unwrap_err();
        assert!(matches!(&err, ConnectError::NotAUrl));
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn sqlite_urls_are_paths() {
        assert_eq!(
            parse("sqlite://locks.db").ok(),
            Some(Target::Sqlite { path: "locks.db" })
        );
        assert_eq!(
            parse("sqlite:///var/lib/app/locks.db").ok(),
            Some(Target::Sqlite {
                path: "/var/lib/app/locks.db"
            })
        );
        assert!(matches!(
            parse("sqlite://"),
            Err(ConnectError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn postgres_urls_and_their_tls_mode() {
        let url = "postgres://app:pw@db:5432/app";
        assert_eq!(parse(url).ok(), Some(Target::Postgres { url, tls: false }));
        let url = "postgresql://db/app?application_name=x&sslmode=require";
        assert_eq!(parse(url).ok(), Some(Target::Postgres { url, tls: true }));
        let url = "postgres://db/app?sslmode=prefer";
        assert_eq!(parse(url).ok(), Some(Target::Postgres { url, tls: false }));
        let url = "postgres://app:pw@h1:5432,h2:5433/app?target_session_attrs=read-write";
        assert_eq!(parse(url).ok(), Some(Target::Postgres { url, tls: false }));
    }

    #[cfg(not(feature = "postgres"))]
    #[test]
    fn postgres_urls_without_the_feature_name_it() {
        let err = parse("postgresql://app:hunter2@db/app")
            .and_then(Target::enabled)
            .unwrap_err();
        assert!(matches!(
            err,
            ConnectError::FeatureDisabled {
                feature: "postgres",
                ..
            }
        ));
    }

    #[cfg(not(feature = "postgres-tls"))]
    #[test]
    fn postgres_tls_urls_without_the_feature_name_it() {
        let err = parse("postgres://db/app?sslmode=require")
            .and_then(Target::enabled)
            .unwrap_err();
        assert!(matches!(
            err,
            ConnectError::FeatureDisabled {
                feature: "postgres-tls",
                ..
            }
        ));
    }

    #[test]
    fn etcd_urls_and_their_tls_mode() {
        let url = "etcd://app:pw@a:2379,b:2379/billing";
        assert_eq!(parse(url).ok(), Some(Target::Etcd { url, tls: false }));
        let url = "ETCDS://a:2379";
        assert_eq!(parse(url).ok(), Some(Target::Etcd { url, tls: true }));
    }

    #[cfg(not(feature = "etcd"))]
    #[test]
    fn etcd_urls_without_the_feature_name_it() {
        let err = parse("etcd://app:hunter2@a:2379")
            .and_then(Target::enabled)
            .unwrap_err();
        assert!(matches!(
            err,
            ConnectError::FeatureDisabled {
                feature: "etcd",
                ..
            }
        ));
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn cluster_urls_become_one_url_per_node() {
        assert_eq!(
            parse("redis+cluster://:pw@a:7000, b:7001/0?protocol=resp3").ok(),
            Some(Target::RedisCluster {
                nodes: vec![
                    "redis://:pw@a:7000/0?protocol=resp3".into(),
                    "redis://:pw@b:7001/0?protocol=resp3".into(),
                ],
                tls: false
            })
        );
        assert_eq!(
            parse("rediss+cluster://a:7000").ok(),
            Some(Target::RedisCluster {
                nodes: vec!["rediss://a:7000".into()],
                tls: true
            })
        );
        for bad in [
            "redis+cluster://",
            "redis+cluster://:pw@/",
            "redis+cluster://a:1,,b:2",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(
                matches!(err, ConnectError::InvalidUrl { .. }),
                "{bad}: {err}"
            );
            assert!(!err.to_string().contains("pw@"), "{err}");
        }
    }

    #[test]
    fn sentinel_urls_go_to_the_redis_backend() {
        assert_eq!(
            parse("redis+sentinel://:pw@a,b:5000/m/2").ok(),
            Some(Target::Redis {
                url: "redis+sentinel://:pw@a,b:5000/m/2",
                tls: false
            })
        );
        assert_eq!(
            parse("rediss+sentinel://a/m").ok(),
            Some(Target::Redis {
                url: "rediss+sentinel://a/m",
                tls: true
            })
        );
    }

    #[cfg(feature = "redis")]
    #[test]
    fn sentinel_urls_connect_and_are_shown_without_their_password() {
        let backend = connect("redis+sentinel://:hunter2@127.0.0.1:1,127.0.0.1:2/m").unwrap();
        assert_eq!(backend.kind(), "redis");
        assert_eq!(
            redacted_url("redis+sentinel://app:hunter2@127.0.0.1:1,127.0.0.1:2/m"),
            "redis+sentinel://app:***@127.0.0.1:1,127.0.0.1:2/m/0"
        );
        let err = connect("redis+sentinel://:hunter2@127.0.0.1:1/").unwrap_err();
        assert!(matches!(err, ConnectError::Redis(_)), "{err}");
        assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
    }

    #[cfg(not(feature = "redis"))]
    #[test]
    fn redis_urls_without_the_feature_name_it() {
        let err = parse("redis://127.0.0.1/")
            .and_then(Target::enabled)
            .unwrap_err();
        assert!(matches!(
            err,
            ConnectError::FeatureDisabled {
                feature: "redis",
                ..
            }
        ));
    }

    #[cfg(not(feature = "redis-tls"))]
    #[test]
    fn tls_urls_without_the_feature_name_it() {
        let err = parse("rediss://127.0.0.1/")
            .and_then(Target::enabled)
            .unwrap_err();
        assert!(matches!(
            err,
            ConnectError::FeatureDisabled {
                feature: "redis-tls",
                ..
            }
        ));
    }

    #[cfg(not(feature = "mongodb"))]
    #[test]
    fn mongodb_urls_without_the_feature_name_it() {
        let err = parse("mongodb+srv://cluster0.example.net/")
            .and_then(Target::enabled)
            .unwrap_err();
        assert!(matches!(
            err,
            ConnectError::FeatureDisabled {
                scheme: "mongodb+srv",
                feature: "mongodb"
            }
        ));
    }
}
