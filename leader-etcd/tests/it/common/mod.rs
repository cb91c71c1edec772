//! Test support: the contract harness on the process's shared three-member cluster, and
//! private servers and clusters for the tests that hurt them.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::{Future, ready};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use leader_etcd::{EtcdBackend, EtcdConfig};
use leader_rig::fixtures::{self, EtcdCluster, EtcdServer};
use leader_testkit::Harness;

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

/// How much later than its lease a read/write hold's etcd lease is surely gone in the
/// read/write suite: its checks wait out whole-second leases only (the harness's
/// [`short_lease`](Harness::short_lease)), which etcd does not round, so what is left of
/// [`EXPIRY_SLACK`] is the leader's half-second expiry sweep and its revoke through raft
/// (and the lease was granted before the call that the wait starts after returned).
pub const SHARED_EXPIRY_SLACK: Duration = Duration::from_millis(1000);

/// The contract harness: a fresh backend per call on the shared cluster, waiting with
/// sleeps (plus etcd's expiry slack), this host's clock (etcd has none to read).
pub struct EtcdHarness {
    url: String,
    /// How long after a lease its hold is surely over.
    slack: Duration,
}

impl EtcdHarness {
    /// For the exclusive locks: expiry waits etcd's [`EXPIRY_SLACK`].
    pub fn new() -> Option<EtcdHarness> {
        let url = shared_cluster()?.url();
        Some(EtcdHarness {
            url,
            slack: EXPIRY_SLACK,
        })
    }

    /// For the read/write locks, whose holds expire on etcd leases too:
    /// [`SHARED_EXPIRY_SLACK`].
    pub fn shared() -> Option<EtcdHarness> {
        let url = shared_cluster()?.url();
        Some(EtcdHarness {
            url,
            slack: SHARED_EXPIRY_SLACK,
        })
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
        std::thread::sleep(lease + self.slack);
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

/// A port of 127.0.0.1 that nobody listens on (bound, then let go).
pub fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Connect in one second and answer in two, so tests of broken members stay short.
pub fn fast(prefix: &str) -> EtcdConfig {
    config(prefix)
        .with_connect_timeout(Duration::from_secs(1))
        .with_operation_timeout(Duration::from_secs(2))
}

/// The longest a failing call of a backend with `config` may take: its operation
/// timeout, and a second for a loaded machine.
pub fn bound(config: &EtcdConfig) -> Duration {
    config.operation_timeout() + Duration::from_secs(1)
}

/// Runs `call` and checks that it failed within `bound` with a transient error on `key`
/// naming etcd.
#[track_caller]
pub fn fails_fast<T: std::fmt::Debug>(
    what: &str,
    key: &leader_core::LockName,
    bound: Duration,
    call: impl FnOnce() -> Result<T, leader_core::Error>,
) {
    leader_testkit::checks::fails_fast(what, key.as_str(), bound, "etcd", call);
}

/// Retries `call` until it succeeds (transient errors in between), at most `within`.
#[track_caller]
pub fn recovers<T>(within: Duration, mut call: impl FnMut() -> Result<T, leader_core::Error>) -> T {
    let deadline = std::time::Instant::now() + within;
    loop {
        match call() {
            Ok(value) => return value,
            Err(err) => {
                assert!(err.is_transient(), "{err}");
                assert!(
                    std::time::Instant::now() < deadline,
                    "no recovery within {within:?}: {err}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// A plain etcd client beside the backend, on a runtime of its own: to write what the
/// backend never writes, read its keys back, and see the cluster's revision.
pub struct Raw {
    runtime: tokio::runtime::Runtime,
    client: etcd_client::Client,
}

impl Raw {
    /// A client of the members `endpoints`, as `user` if given.
    pub fn connect(endpoints: &[String], user: Option<(&str, &str)>) -> Raw {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(10));
        if let Some((name, password)) = user {
            options = options.with_user(name, password);
        }
        let client = runtime
            .block_on(etcd_client::Client::connect(endpoints, Some(options)))
            .unwrap();
        Raw { runtime, client }
    }

    /// Runs `f` with the client on the runtime.
    pub fn with<T, F: Future<Output = Result<T, etcd_client::Error>>>(
        &self,
        f: impl FnOnce(etcd_client::Client) -> F,
    ) -> Result<T, etcd_client::Error> {
        self.runtime.block_on(f(self.client.clone()))
    }

    /// Writes `value` at `key`, on no lease.
    pub fn put(&self, key: &str, value: &[u8]) {
        let (key, value) = (key.to_owned(), value.to_vec());
        self.with(|mut c| async move { c.put(key, value, None).await })
            .unwrap();
    }

    /// The value at `key`, if any.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let key = key.to_owned();
        let answer = self
            .with(|mut c| async move { c.get(key, None).await })
            .unwrap();
        answer.kvs().first().map(|kv| kv.value().to_vec())
    }

    /// The cluster's current revision.
    pub fn revision(&self) -> i64 {
        let answer = self
            .with(|mut c| async move { c.get("revision-probe", None).await })
            .unwrap();
        answer.header().unwrap().revision()
    }
}

/// The fencing counter of `name` under `prefix`, as stored.
pub fn stored_fence(raw: &Raw, prefix: &str, name: &leader_core::LockName) -> u64 {
    let value = raw.get(&format!("{prefix}/fence/{name}")).unwrap();
    String::from_utf8(value).unwrap().parse().unwrap()
}

/// Waits (polling `state`) until nobody holds `key`, at most `within`.
pub fn wait_until_free(backend: &EtcdBackend, key: &leader_core::LockName, within: Duration) {
    use leader_core::LockBackend;
    leader_testkit::wait_until("the lock to be free", within, || {
        std::thread::sleep(Duration::from_millis(20));
        LockBackend::state(backend, key).unwrap().leader().is_none()
    });
}
