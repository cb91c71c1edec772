//! The PostgreSQL backend against a local server, one uncontended acquire + release cycle
//! per iteration:
//!
//! - `postgres/blocking`: the floor (the backend's own acquire and release statements,
//!   prepared, run raw on one connection whose driver runs on a one-worker tokio runtime,
//!   each awaited with `block_on` from the bench thread: what a blocking caller of
//!   tokio-postgres does), the simplest upsert + update for reference, the backend's
//!   `try_acquire` + `release`, and `LeaderElector::run_if_leader` with an empty action;
//! - `postgres/async` (tokio, current thread): the backend's `try_acquire` + `release` and
//!   `AsyncLeaderElector::run_if_leader`;
//! - interleaved (printed, not a criterion group): 2,000 rounds running every case of a
//!   group in turn, rotating the order, so that load from elsewhere hits all cases alike;
//!   each case's median and its ratio to the floor's median.
//!
//! The server is one of the bench's own (`leader_testkit::fixtures`: `initdb` into a
//! temporary directory). It inherits the bench's CPU affinity, so `taskset` pins both:
//!
//! ```text
//! cargo bench -p leader-benches --bench postgres
//! taskset -c 0 cargo bench -p leader-benches --bench postgres   # bench and server on one core
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use leader_async::AsyncLeaderElector;
use leader_benches::{
    Case, LEASE, backend_cycle, backend_cycle_async, elector_cycle, elector_cycle_async,
    interleaved, try_once_options,
};
use leader_blocking::LeaderElector;
use leader_core::{LockName, OwnerToken};
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_testkit::fixtures::{self, PostgresServer};
use tokio::runtime::Runtime;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, Statement};

const TABLE: &str = "bench_locks";

/// Raw statements on one connection: the backend's own acquire and release (the floor),
/// and the simplest statements that take and free a lock row (for reference: what the
/// backend's conditions, fencing and NOTIFY cost on the server).
struct Floor {
    runtime: Runtime,
    client: Arc<Client>,
    acquire: Statement,
    release: Statement,
    simple_acquire: Statement,
    simple_release: Statement,
}

impl Floor {
    fn new(url: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let url = url.to_owned();
        let (acquire, release) = leader_postgres::__private::statements(TABLE).unwrap();
        let (client, statements) = runtime.block_on(async move {
            let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
            tokio::spawn(connection);
            let acquire = client.prepare_typed(&acquire, &[Type::TEXT, Type::TEXT, Type::TEXT, Type::INT8]).await.unwrap();
            let release = client.prepare_typed(&release, &[Type::TEXT, Type::TEXT, Type::INT8, Type::TEXT]).await.unwrap();
            let simple_acquire = client
                .prepare(&format!(
                    "INSERT INTO {TABLE} AS held (name, owner, leader_id, fencing_token, acquired_at, expires_at)
                     VALUES ($1::text, $2::text, 'bench-node', 1, clock_timestamp(),
                         clock_timestamp() + $3::bigint * interval '1 microsecond')
                     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,
                         expires_at = excluded.expires_at
                     RETURNING fencing_token, acquired_at, expires_at"
                ))
                .await
                .unwrap();
            let simple_release = client
                .prepare(&format!(
                    "UPDATE {TABLE} SET owner = NULL, expires_at = clock_timestamp()
                     WHERE name = $1::text AND owner = $2::text"
                ))
                .await
                .unwrap();
            (client, [acquire, release, simple_acquire, simple_release])
        });
        let [acquire, release, simple_acquire, simple_release] = statements;
        Floor {
            runtime,
            client: Arc::new(client),
            acquire,
            release,
            simple_acquire,
            simple_release,
        }
    }

    /// The backend's two statements, raw.
    fn cycle(&self) {
        let owner = OwnerToken::random().to_string();
        let micros = i64::try_from(LEASE.as_micros()).unwrap();
        let taken = self
            .runtime
            .block_on(self.client.query_one(
                &self.acquire,
                &[&"bench-floor", &owner, &"bench-node", &micros],
            ))
            .unwrap();
        black_box(taken);
        let channel = format!("{TABLE}_released");
        let freed = self
            .runtime
            .block_on(
                self.client
                    .query_one(&self.release, &[&"bench-floor", &owner, &0_i64, &channel]),
            )
            .unwrap();
        black_box(freed);
    }

    /// The simplest two statements, raw.
    fn simple_cycle(&self) {
        let owner = OwnerToken::random().to_string();
        let micros = i64::try_from(LEASE.as_micros()).unwrap();
        let taken = self
            .runtime
            .block_on(
                self.client
                    .query_one(&self.simple_acquire, &[&"bench-simple", &owner, &micros]),
            )
            .unwrap();
        black_box(taken);
        let freed = self
            .runtime
            .block_on(
                self.client
                    .execute(&self.simple_release, &[&"bench-simple", &owner]),
            )
            .unwrap();
        assert_eq!(freed, 1);
    }
}

struct Setup {
    floor: Floor,
    backend: PostgresBackend,
    key: LockName,
    elector: LeaderElector<PostgresBackend>,
    runtime: Runtime,
    async_key: LockName,
    async_elector: AsyncLeaderElector<PostgresBackend>,
}

impl Setup {
    fn new(url: &str) -> Self {
        let config = || PostgresConfig::new().with_table(TABLE);
        let backend = PostgresBackend::connect_with(url, config()).unwrap();
        // The first call makes the table the floor's statements need.
        let key = LockName::new("bench-backend").unwrap();
        backend_cycle(&backend, &key);
        let elector_backend = PostgresBackend::connect_with(url, config()).unwrap();
        let async_backend = PostgresBackend::connect_with(url, config()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Setup {
            floor: Floor::new(url),
            backend,
            key,
            elector: LeaderElector::new(elector_backend, try_once_options()).unwrap(),
            runtime,
            async_key: LockName::new("bench-backend-async").unwrap(),
            async_elector: AsyncLeaderElector::new(async_backend, try_once_options()).unwrap(),
        }
    }
}

const FLOOR: &str = "floor: the backend's two statements, raw";
const SIMPLE: &str = "simplest INSERT ON CONFLICT + UPDATE, raw";
const BACKEND: &str = "backend: try_acquire + release";
const ELECTOR: &str = "elector: run_if_leader";

fn groups(c: &mut Criterion, s: &Setup) {
    let mut group = c.benchmark_group("postgres/blocking");
    group.bench_function(FLOOR, |b| b.iter(|| s.floor.cycle()));
    group.bench_function(SIMPLE, |b| b.iter(|| s.floor.simple_cycle()));
    group.bench_function(BACKEND, |b| b.iter(|| backend_cycle(&s.backend, &s.key)));
    group.bench_function(ELECTOR, |b| b.iter(|| elector_cycle(&s.elector)));
    group.finish();
    let mut group = c.benchmark_group("postgres/async");
    group.bench_function(BACKEND, |b| {
        b.to_async(&s.runtime)
            .iter(|| backend_cycle_async(&s.backend, &s.async_key))
    });
    group.bench_function(ELECTOR, |b| {
        b.to_async(&s.runtime)
            .iter(|| elector_cycle_async(&s.async_elector))
    });
    group.finish();
}

fn interleaved_all(s: &Setup, rounds: usize) {
    let rt = &s.runtime;
    let mut cases: Vec<Case<'_>> = vec![
        (FLOOR, Box::new(|| s.floor.cycle())),
        (SIMPLE, Box::new(|| s.floor.simple_cycle())),
        (BACKEND, Box::new(|| backend_cycle(&s.backend, &s.key))),
        (ELECTOR, Box::new(|| elector_cycle(&s.elector))),
        (
            "async backend: try_acquire + release",
            Box::new(|| rt.block_on(backend_cycle_async(&s.backend, &s.async_key))),
        ),
        (
            "async elector: run_if_leader",
            Box::new(|| rt.block_on(elector_cycle_async(&s.async_elector))),
        ),
    ];
    interleaved("postgres", rounds, &mut cases);
}

fn main() {
    let Some(server) = fixtures::require("postgres", PostgresServer::start()) else {
        return;
    };
    let setup = Setup::new(&server.url());
    let mut criterion = Criterion::default().configure_from_args();
    groups(&mut criterion, &setup);
    criterion.final_summary();
    // `cargo bench -- <filter>` runs only the matching criterion cases; the interleaved
    // comparison (2,000 rounds of every case) runs unfiltered.
    let filtered = leader_benches::name_filter_given();
    if !filtered {
        interleaved_all(&setup, 2000);
    }
}
