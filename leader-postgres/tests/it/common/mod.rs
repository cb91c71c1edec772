//! Test support: the contract harness on the process's shared server, private servers
//! for the tests that hurt them, and a raw client for looking at (and spoiling) tables.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::{Future, ready};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_rig::fixtures::{self, PostgresServer};
use leader_testkit::Harness;
use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls, Row};

/// The shared server's URL, or `None` (after a skip line) when PostgreSQL is not
/// installed and servers are not required.
pub fn url() -> Option<String> {
    fixtures::shared_postgres().map(PostgresServer::url)
}

/// A server of the test's own, for a test that stops or restarts it.
pub fn private_server() -> Option<PostgresServer> {
    fixtures::require("postgres", PostgresServer::start())
}

/// Short timeouts, so broken servers fail fast; the lock table `table`.
pub fn config(table: &str) -> PostgresConfig {
    PostgresConfig::new()
        .with_table(table)
        .with_connect_timeout(Duration::from_secs(2))
        .with_operation_timeout(Duration::from_secs(5))
}

/// A raw client on its own runtime, usable from any thread (inside a runtime or not).
pub struct Raw {
    runtime: Option<Runtime>,
    client: Arc<Client>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        // May happen inside a test's runtime, where a plain drop would panic.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Raw {
    pub fn connect(url: &str) -> Raw {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let url = url.to_owned();
        let client = Raw::on(&runtime, async move {
            let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
            tokio::spawn(connection);
            client
        });
        Raw {
            runtime: Some(runtime),
            client: Arc::new(client),
        }
    }

    fn on<T: Send + 'static>(runtime: &Runtime, f: impl Future<Output = T> + Send + 'static) -> T {
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = sender.send(f.await);
        });
        receiver.recv().unwrap()
    }

    /// Runs `sql` (any number of statements).
    pub fn execute(&self, sql: &str) {
        self.try_execute(sql).unwrap();
    }

    /// Runs `sql`, giving the server's error.
    pub fn try_execute(&self, sql: &str) -> Result<(), tokio_postgres::Error> {
        let sql = sql.to_owned();
        let client = Arc::clone(&self.client);
        Raw::on(self.runtime.as_ref().unwrap(), async move {
            client.batch_execute(&sql).await
        })
    }

    /// The rows of one query without parameters.
    pub fn rows(&self, sql: &str) -> Vec<Row> {
        let sql = sql.to_owned();
        let client = Arc::clone(&self.client);
        Raw::on(self.runtime.as_ref().unwrap(), async move {
            client.query(&sql, &[]).await.unwrap()
        })
    }

    /// The server's clock.
    pub fn server_now(&self) -> SystemTime {
        self.rows("SELECT clock_timestamp()")[0].get(0)
    }
}

/// The contract harness: a fresh backend per call on the shared server, waiting with
/// sleeps, the server's clock.
pub struct PostgresHarness {
    url: String,
    raw: Raw,
}

impl PostgresHarness {
    pub fn new() -> Option<PostgresHarness> {
        let url = url()?;
        let raw = Raw::connect(&url);
        Some(PostgresHarness { url, raw })
    }
}

impl Harness for PostgresHarness {
    type Backend = PostgresBackend;

    fn backend(&self) -> impl Future<Output = PostgresBackend> {
        ready(PostgresBackend::connect_with(&self.url, config("contract_locks")).unwrap())
    }

    fn advance(&self, by: Duration) {
        std::thread::sleep(by);
    }

    fn backend_now(&self) -> SystemTime {
        self.raw.server_now()
    }

    /// Waited out with real sleeps next to real round trips: long enough that a loaded
    /// machine's scheduling delays cannot expire a lease early.
    fn short_lease(&self) -> Duration {
        Duration::from_millis(600)
    }

    fn clock_tolerance(&self) -> Duration {
        Duration::from_millis(300)
    }
}

/// Takes `key` for `node` for `lease_time`, or panics.
pub fn must_acquire(
    backend: &PostgresBackend,
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
    leader_testkit::checks::assert_backend_error(result, key.as_str(), transient, "postgres");
}
