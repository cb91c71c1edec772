//! Backends whose waiters hear of releases (PostgreSQL's `LISTEN`, Redis's subscription,
//! etcd's watch, MongoDB's change stream),
//! handed out once their notification session is up, so a test times the wake-up, not the
//! session's start.

use std::time::{Duration, Instant};

use leader::{
    AnyBackend, EtcdBackend, EtcdConfig, MongoBackend, MongoConfig, PostgresBackend,
    PostgresConfig, RedisBackend, RedisConfig,
};
use leader_core::{AcquireOutcome, AcquireRequest, Lease, LockBackend, LockName, OwnerToken};
use leader_rig::fixtures;

/// Where the backends of one notifying kind connect.
enum Servers {
    Postgres(String),
    Redis(String),
    RedisCluster(Vec<String>),
    Etcd(String),
    Mongo(String),
}

/// Backends of one kind (`redis`, `redis_cluster`, `postgres`, `etcd`, `mongodb`) on the test
/// process's shared servers, each a node of its own.
pub(crate) struct Notified {
    servers: Servers,
    table: &'static str,
}

impl Notified {
    /// `None` when the server is not installed and servers are not required. PostgreSQL's
    /// locks go to `table` (etcd's under the prefix `table`, MongoDB's to the collection
    /// `table`).
    pub(crate) fn on(kind: &str, table: &'static str) -> Option<Notified> {
        let servers = match kind {
            "postgres" => Servers::Postgres(fixtures::shared_postgres()?.url()),
            "redis" => Servers::Redis(fixtures::shared_redis()?.url()),
            "redis_cluster" => Servers::RedisCluster(fixtures::shared_redis_cluster()?.urls()),
            "etcd" => Servers::Etcd(fixtures::shared_etcd()?.url()),
            "mongodb" => Servers::Mongo(fixtures::shared_mongo()?.uri()),
            other => panic!("no notifying backend {other}"),
        };
        Some(Notified { servers, table })
    }

    /// A backend whose release notifications are up.
    pub(crate) fn listening(&self) -> AnyBackend {
        self.backend(true)
    }

    /// A backend with release notifications on (up) or off (its waiters only poll).
    pub(crate) fn backend(&self, notifications: bool) -> AnyBackend {
        match &self.servers {
            Servers::Postgres(url) => {
                let config = PostgresConfig::new()
                    .with_table(self.table)
                    .with_connect_timeout(Duration::from_secs(2))
                    .with_operation_timeout(Duration::from_secs(5))
                    .with_release_notifications(notifications);
                let backend = PostgresBackend::connect_with(url, config).unwrap();
                if notifications {
                    up("LISTEN", Duration::from_secs(10), &backend, || {
                        backend.is_listening()
                    });
                }
                backend.into()
            }
            Servers::Etcd(url) => {
                let config = EtcdConfig::new()
                    .with_prefix(self.table)
                    .with_connect_timeout(Duration::from_secs(2))
                    .with_operation_timeout(Duration::from_secs(5))
                    .with_release_notifications(notifications);
                let backend = EtcdBackend::connect_with(url, config).unwrap();
                if notifications {
                    up("the watch", Duration::from_secs(10), &backend, || {
                        backend.is_listening()
                    });
                }
                backend.into()
            }
            Servers::Mongo(uri) => {
                let config = MongoConfig::new()
                    .with_collection(self.table)
                    .with_server_selection_timeout(Duration::from_secs(2))
                    .with_connect_timeout(Duration::from_secs(2))
                    .with_operation_timeout(Duration::from_secs(5))
                    .with_release_notifications(notifications);
                let backend = MongoBackend::connect_with(uri, config).unwrap();
                if notifications {
                    up(
                        "the change stream",
                        Duration::from_secs(10),
                        &backend,
                        || backend.is_listening(),
                    );
                }
                backend.into()
            }
            Servers::Redis(_) | Servers::RedisCluster(_) => {
                let config = RedisConfig::default()
                    .with_max_idle_connections(16)
                    .with_release_notifications(notifications);
                let backend = match &self.servers {
                    Servers::RedisCluster(urls) => RedisBackend::connect_cluster(urls, config),
                    _ => RedisBackend::connect_with(self.url(), config),
                }
                .unwrap();
                if notifications {
                    up("the subscription", Duration::from_secs(5), &backend, || {
                        backend.is_subscribed()
                    });
                }
                backend.into()
            }
        }
    }

    fn url(&self) -> &str {
        match &self.servers {
            Servers::Postgres(url)
            | Servers::Redis(url)
            | Servers::Etcd(url)
            | Servers::Mongo(url) => url,
            Servers::RedisCluster(urls) => &urls[0],
        }
    }
}

/// Starts `backend`'s notification session and waits (up to `within`) until it is up.
fn up(what: &str, within: Duration, backend: &impl leader_core::Backend, is_up: impl Fn() -> bool) {
    assert!(backend.release_events().is_some());
    let deadline = Instant::now() + within;
    while !is_up() {
        assert!(Instant::now() < deadline, "{what} did not come up");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Takes `key` for `node` for `lease_time`, or panics.
pub(crate) fn must_acquire(
    backend: &impl LockBackend,
    key: &LockName,
    node: &str,
    lease_time: Duration,
) -> Lease {
    let request = AcquireRequest::new(key, OwnerToken::random(), node, lease_time);
    match LockBackend::try_acquire(backend, request) {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key}: {other:?}"),
    }
}

/// The median of `samples`.
pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}
