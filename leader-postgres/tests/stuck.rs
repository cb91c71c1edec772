//! A statement stuck behind another session's row lock ends on the server when the
//! caller's operation timeout ends: no server process is left working for a caller that
//! gave up.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{Raw, assert_backend_error, config, must_acquire, url};
use leader_core::{LockBackend, LockName};
use leader_postgres::PostgresBackend;
use leader_testkit::{fresh_name, wait_until};

/// The server processes of this backend (its application name) waiting on a lock.
fn stuck(raw: &Raw, application: &str) -> i64 {
    raw.rows(&format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{application}'
            AND state = 'active' AND wait_event_type = 'Lock'"
    ))[0]
        .get(0)
}

#[test]
fn a_statement_stuck_behind_a_row_lock_ends_on_the_server_at_the_operation_timeout() {
    let Some(url) = url() else {
        return;
    };
    let table = "stuck_locks";
    let timeout = Duration::from_millis(800);
    let application = format!("stuck-{}", std::process::id());
    let named = format!("{url}?application_name={application}");
    let backend =
        PostgresBackend::connect_with(&named, config(table).with_operation_timeout(timeout))
            .unwrap();
    let key: LockName = fresh_name("stuck");
    let lease = must_acquire(&backend, &key, "node-a", Duration::from_secs(30));

    // Another session (a person at psql) holds the row's lock in an open transaction.
    let psql = Raw::connect(&url);
    psql.execute(&format!(
        "BEGIN; SELECT * FROM {table} WHERE name = '{key}' FOR UPDATE"
    ));

    let started = Instant::now();
    let extended = LockBackend::extend(&backend, &lease, Duration::from_secs(30), true);
    assert!(started.elapsed() < timeout + Duration::from_secs(2));
    assert_backend_error(extended, &key, true);

    // The server gives up on the statement too, within a second of the caller.
    let observer = Raw::connect(&url);
    wait_until(
        "the stuck statement to end on the server",
        Duration::from_secs(1),
        || stuck(&observer, &application) == 0,
    );

    psql.execute("ROLLBACK");
    // The session that was stuck (or a new one) serves the next call.
    let again = LockBackend::extend(&backend, &lease, Duration::from_secs(30), true).unwrap();
    assert!(
        matches!(again, leader_core::ExtendOutcome::Extended { .. }),
        "{again:?}"
    );
}
