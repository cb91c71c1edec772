//! Test support: the contract harness on the process's shared three-member cluster, and
//! private servers and clusters for the tests that hurt them.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::{Future, ready};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use leader_etcd::{EtcdBackend, EtcdConfig};
use leader_testkit::Harness;
use leader_testkit::fixtures::{self, EtcdCluster, EtcdServer};

/// How much later than its TTL etcd may remove an expired lease's keys: TTLs are whole
/// seconds (a lease is rounded up to the next one), and the cluster's leader looks for
/// expired leases every half second, then revokes them through raft.
pub const EXPIRY_SLACK: Duration = Duration::from_millis(1500);

/// The cluster this test process shares, started on first use (`None` after a skip line
/// when etcd is not installed and servers are not required).
pub fn shared_cluster() -> Option<&'static EtcdCluster> {
    static SHARED: OnceLock<Option<EtcdCluster>> = OnceLock::new();
    SHARED
        .get_or_init(|| fixtures::require("etcd", EtcdCluster::start()))
        .as_ref()
}

/// A one-member server of the test's own, for a test that stops or restarts it.
pub fn private_server() -> Option<EtcdServer> {
    fixtures::require("etcd", EtcdServer::start())
}

/// A three-member cluster of the test's own, for a test that hurts its members.
pub fn private_cluster() -> Option<EtcdCluster> {
    fixtures::require("etcd", EtcdCluster::start())
}

/// Short timeouts, so broken members fail fast; the key prefix `prefix`.
pub fn config(prefix: &str) -> EtcdConfig {
    EtcdConfig::new()
        .with_prefix(prefix)
        .with_connect_timeout(Duration::from_secs(2))
        .with_operation_timeout(Duration::from_secs(5))
        .with_keep_alive(Duration::from_secs(1))
}

/// The contract harness: a fresh backend per call on the shared cluster, waiting with
/// sleeps (plus etcd's expiry slack), this host's clock (etcd has none to read).
pub struct EtcdHarness {
    url: String,
}

impl EtcdHarness {
    pub fn new() -> Option<EtcdHarness> {
        let url = shared_cluster()?.url();
        Some(EtcdHarness { url })
    }
}

impl Harness for EtcdHarness {
    type Backend = EtcdBackend;

    fn backend(&self) -> impl Future<Output = EtcdBackend> {
        ready(EtcdBackend::connect_with(&self.url, config("contract")).unwrap())
    }

    fn advance(&self, by: Duration) {
        std::thread::sleep(by);
    }

    fn expire(&self, lease: Duration) {
        std::thread::sleep(lease + EXPIRY_SLACK);
    }

    fn backend_now(&self) -> SystemTime {
        SystemTime::now()
    }

    /// etcd's shortest lease on the fixtures' clusters (their election timeout is 500 ms,
    /// so the minimum TTL is one second).
    fn short_lease(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn clock_tolerance(&self) -> Duration {
        Duration::from_millis(300)
    }
}

/// Takes `key` for `node` for `lease_time`, or panics.
pub fn must_acquire(
    backend: &EtcdBackend,
    key: &leader_core::LockName,
    node: &str,
    lease_time: Duration,
) -> leader_core::Lease {
    use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, OwnerToken};
    let request = AcquireRequest::new(key, OwnerToken::random(), node, lease_time);
    match LockBackend::try_acquire(backend, request) {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key}: {other:?}"),
    }
}

/// A backend error on `key`, of the given kind, naming the backend.
pub fn assert_backend_error<T: std::fmt::Debug>(
    result: Result<T, leader_core::Error>,
    key: &leader_core::LockName,
    transient: bool,
) {
    leader_testkit::checks::assert_backend_error(result, key.as_str(), transient, "etcd");
}
