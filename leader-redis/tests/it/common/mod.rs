//! Shared by the integration tests: the contract-suite harness for Redis (on the test
//! process's shared servers) and private redis-servers for fault tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::future::{Future, ready};
use std::time::{Duration, SystemTime};

use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures::{self, RedisSentinel, RedisServer};
use leader_testkit::Harness;

/// Where the tests' servers are.
#[derive(Debug, Clone)]
pub enum Servers {
    Single(String),
    Cluster(Vec<String>),
    /// A Sentinel URL, and the master's URL for test setup (the set does not fail over).
    Sentinel {
        url: String,
        master: String,
    },
}

/// The contract harness: a fresh backend per call, time passes by sleeping, and the
/// backend's clock is the server's `TIME`.
#[derive(Debug, Clone)]
pub struct RedisHarness {
    servers: Servers,
    config: RedisConfig,
}

impl RedisHarness {
    /// The test process's shared standalone Redis (skips without `redis-server`, unless
    /// servers are required).
    pub fn standalone() -> Option<Self> {
        fixtures::shared_redis().map(|server| RedisHarness::new(Servers::Single(server.url())))
    }

    /// The test process's shared three-master Redis Cluster.
    pub fn cluster() -> Option<Self> {
        fixtures::shared_redis_cluster()
            .map(|cluster| RedisHarness::new(Servers::Cluster(cluster.urls())))
    }

    /// The test process's shared master, replica and three sentinels (never failed over:
    /// failover tests start a set of their own).
    pub fn sentinel() -> Option<Self> {
        static SHARED: std::sync::OnceLock<Option<RedisSentinel>> = std::sync::OnceLock::new();
        let set = SHARED
            .get_or_init(|| fixtures::require("redis sentinels", RedisSentinel::start()))
            .as_ref()?;
        let master = set.master_addr().expect("the sentinels name a master");
        Some(RedisHarness::new(Servers::Sentinel {
            url: set.url(),
            master: format!("redis://{master}/"),
        }))
    }

    pub fn new(servers: Servers) -> Self {
        RedisHarness {
            servers,
            config: RedisConfig::default().with_max_idle_connections(16),
        }
    }

    pub fn with_config(mut self, config: RedisConfig) -> Self {
        self.config = config;
        self
    }

    pub fn make(&self) -> RedisBackend {
        match &self.servers {
            Servers::Single(url) => RedisBackend::connect_with(url, self.config.clone()).unwrap(),
            Servers::Cluster(urls) => {
                RedisBackend::connect_cluster(urls, self.config.clone()).unwrap()
            }
            Servers::Sentinel { url, .. } => {
                RedisBackend::connect_sentinel(url, self.config.clone()).unwrap()
            }
        }
    }

    /// A plain connection to a server (any cluster node), for test setup.
    pub fn raw(&self) -> redis::Connection {
        let url = match &self.servers {
            Servers::Single(url) | Servers::Sentinel { master: url, .. } => url.clone(),
            Servers::Cluster(urls) => urls[0].clone(),
        };
        redis::Client::open(url).unwrap().get_connection().unwrap()
    }

    /// A connection that routes keys to their cluster node (or the single server).
    pub fn raw_routed(&self) -> Box<dyn redis::ConnectionLike> {
        match &self.servers {
            Servers::Single(_) | Servers::Sentinel { .. } => Box::new(self.raw()),
            Servers::Cluster(urls) => Box::new(
                redis::cluster::ClusterClient::new(urls.clone())
                    .unwrap()
                    .get_connection()
                    .unwrap(),
            ),
        }
    }
}

impl Harness for RedisHarness {
    type Backend = RedisBackend;

    fn backend(&self) -> impl Future<Output = RedisBackend> {
        ready(self.make())
    }

    fn advance(&self, by: Duration) {
        std::thread::sleep(by);
    }

    fn backend_now(&self) -> SystemTime {
        server_time(&mut self.raw())
    }
}

/// A redis-server of the test's own, for a test that kills, pauses or restarts it (skips
/// without `redis-server`, unless servers are required).
pub fn private_server() -> Option<RedisServer> {
    fixtures::require("redis-server", RedisServer::start())
}

/// The server's `TIME`.
pub fn server_time(conn: &mut redis::Connection) -> SystemTime {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(conn).unwrap();
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros)
}

/// How many scripts the server has run (`INFO commandstats`): use a server of the test's
/// own, where no other test's scripts count.
pub fn scripts_run(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap();
    info.lines()
        .filter(|line| line.starts_with("cmdstat_evalsha:") || line.starts_with("cmdstat_eval:"))
        .filter_map(|line| {
            line.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// Starts `backend`'s release subscription and waits (up to 5 s) until it is up.
pub fn subscribed(backend: &RedisBackend) {
    use leader_core::Backend;
    assert!(backend.release_events().is_some());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !backend.is_subscribed() {
        assert!(
            std::time::Instant::now() < deadline,
            "the subscription did not come up"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
