//! The floor of a PostgreSQL cycle: the backend's own acquire and release statements,
//! prepared and sent raw on one connection whose driver runs on a one-worker tokio
//! runtime, with the backend's session settings, and the simplest statements that take
//! and free a lock row (what the backend's conditions, fencing and `NOTIFY` cost on the
//! server).
//!
//! Every function here panics when the server fails it: a failing bench stops.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use leader_core::OwnerToken;
use leader_postgres::PostgresConfig;
use tokio::runtime::Runtime;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, Statement};

use crate::LEASE;

/// Raw statements on one connection: the backend's own acquire and release (the floor),
/// and the simplest statements that take and free a lock row (for reference: what the
/// backend's conditions, fencing and NOTIFY cost on the server).
pub struct Floor {
    /// The runtime the connection's driver runs on (one worker).
    pub runtime: Runtime,
    /// The connection.
    pub client: Arc<Client>,
    /// The lock row [`cycle`](Self::cycle) takes and frees (one per floor, so two floors
    /// of one bench never share a row).
    lock: &'static str,
    /// The channel the release statement notifies, built once.
    channel: String,
    /// The backend's acquire statement: name, owner, node id, lease in microseconds.
    pub acquire: Statement,
    /// The backend's release statement: name, owner, minimum lease left in
    /// microseconds, the release channel.
    pub release: Statement,
    simple_acquire: Statement,
    simple_release: Statement,
}

impl std::fmt::Debug for Floor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Floor")
            .field("lock", &self.lock)
            .finish_non_exhaustive()
    }
}

impl Floor {
    /// A connection to `url` with the session settings the backend's sessions have (a
    /// `statement_timeout` of the default operation timeout, so that the server arms a
    /// timer for every statement as it does for the backend's), the statements prepared
    /// against the lock table `table` (which the backend made: run one of its calls
    /// first).
    ///
    /// # Panics
    ///
    /// When the server fails a statement (a broken bench).
    pub fn new(url: &str, table: &str) -> Self {
        let millis = PostgresConfig::default().operation_timeout().as_millis();
        let options = format!("-c statement_timeout={millis}");
        Floor::connect(url, table, "bench-floor", Some(options))
    }

    /// [`new`](Self::new) without the backend's `statement_timeout`: what that timer
    /// costs the server, beside the floor.
    ///
    /// # Panics
    ///
    /// As for [`new`](Self::new).
    pub fn without_statement_timeout(url: &str, table: &str) -> Self {
        Floor::connect(url, table, "bench-floor-plain", None)
    }

    /// A connection to `url` whose session starts with `options`, cycling on `lock`.
    fn connect(url: &str, table: &str, lock: &'static str, options: Option<String>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut config: tokio_postgres::Config = url.parse().unwrap();
        if let Some(options) = options {
            config.options(options);
        }
        let (acquire, release) = leader_postgres::raw::statements(table).unwrap();
        let (client, statements) = runtime.block_on(async move {
            let (client, connection) = config.connect(NoTls).await.unwrap();
            tokio::spawn(connection);
            let acquire = client.prepare_typed(&acquire, &[Type::TEXT, Type::TEXT, Type::TEXT, Type::INT8]).await.unwrap();
            let release = client.prepare_typed(&release, &[Type::TEXT, Type::TEXT, Type::INT8, Type::TEXT]).await.unwrap();
            let simple_acquire = client
                .prepare(&format!(
                    "INSERT INTO {table} AS held (name, owner, leader_id, fencing_token, acquired_at, expires_at)
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
                    "UPDATE {table} SET owner = NULL, expires_at = clock_timestamp()
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
            lock,
            channel: format!("{table}_released"),
            acquire,
            release,
            simple_acquire,
            simple_release,
        }
    }

    /// The backend's two statements, raw.
    ///
    /// # Panics
    ///
    /// When the server fails a statement (a broken bench).
    pub fn cycle(&self) {
        let owner = OwnerToken::random().to_string();
        let micros = i64::try_from(LEASE.as_micros()).unwrap();
        let taken = self
            .runtime
            .block_on(
                self.client
                    .query_one(&self.acquire, &[&self.lock, &owner, &"bench-node", &micros]),
            )
            .unwrap();
        black_box(taken);
        let freed = self
            .runtime
            .block_on(
                self.client
                    .query_one(&self.release, &[&self.lock, &owner, &0_i64, &self.channel]),
            )
            .unwrap();
        black_box(freed);
    }

    /// The backend's two statements, raw, awaited on the caller's runtime: the
    /// floor of the async elector, whose backend's connection also lives on a runtime of
    /// its own.
    ///
    /// # Panics
    ///
    /// When the server fails a statement (a broken bench).
    pub async fn cycle_async(&self) {
        let owner = OwnerToken::random().to_string();
        let micros = i64::try_from(LEASE.as_micros()).unwrap();
        let taken = self
            .client
            .query_one(
                &self.acquire,
                &[&"bench-floor-async", &owner, &"bench-node", &micros],
            )
            .await
            .unwrap();
        black_box(taken);
        let freed = self
            .client
            .query_one(
                &self.release,
                &[&"bench-floor-async", &owner, &0_i64, &self.channel],
            )
            .await
            .unwrap();
        black_box(freed);
    }

    /// The backend's two statements, raw, each run as a task on the connection's runtime
    /// and awaited from the caller's, as the backend runs every async call (so that a
    /// dropped call still ends on the server and frees its session): the async floor plus
    /// the two hops between runtimes that this design costs.
    ///
    /// # Panics
    ///
    /// When the server fails a statement (a broken bench).
    pub async fn cycle_async_spawned(&self) {
        let owner = OwnerToken::random().to_string();
        let micros = i64::try_from(LEASE.as_micros()).unwrap();
        let (client, acquire, taker) = (
            Arc::clone(&self.client),
            self.acquire.clone(),
            owner.clone(),
        );
        let taken = self
            .runtime
            .spawn(async move {
                client
                    .query_one(
                        &acquire,
                        &[&"bench-floor-spawned", &taker, &"bench-node", &micros],
                    )
                    .await
            })
            .await
            .unwrap()
            .unwrap();
        black_box(taken);
        let (client, release, channel) = (
            Arc::clone(&self.client),
            self.release.clone(),
            self.channel.clone(),
        );
        let freed = self
            .runtime
            .spawn(async move {
                client
                    .query_one(
                        &release,
                        &[&"bench-floor-spawned", &owner, &0_i64, &channel],
                    )
                    .await
            })
            .await
            .unwrap()
            .unwrap();
        black_box(freed);
    }

    /// The simplest two statements, raw.
    ///
    /// # Panics
    ///
    /// When the server fails a statement (a broken bench).
    pub fn simple_cycle(&self) {
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
