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

/// A batch renewal is one statement that skips a row another session holds locked: that
/// lease's answer is a transient error at once, and every other lease of the batch is
/// renewed — none waits for the locked row, whose lease is renewed at the next tick.
#[test]
fn a_batch_renewal_skips_a_locked_row_and_renews_the_rest() {
    use leader_core::{BackendErrorKind, Error, ExtendOutcome, Renewal};
    let Some(url) = url() else {
        return;
    };
    let table = "stuck_batch_locks";
    let backend = PostgresBackend::connect_with(&url, config(table)).unwrap();
    assert!(LockBackend::extend_batch_is_native(&backend));
    let keys: Vec<LockName> = (0..5).map(|_| fresh_name("batch")).collect();
    let leases: Vec<_> = keys
        .iter()
        .map(|key| must_acquire(&backend, key, "node-a", Duration::from_secs(30)))
        .collect();
    // Lease 3's lock is someone else's by now: not held, as a single extend says.
    let mut stale = leases[3].clone();
    stale.owner = leader_core::OwnerToken::random();

    let psql = Raw::connect(&url);
    psql.execute(&format!(
        "BEGIN; SELECT * FROM {table} WHERE name = '{}' FOR UPDATE",
        keys[1]
    ));
    let renewals: Vec<Renewal<'_>> = leases
        .iter()
        .enumerate()
        .map(|(i, lease)| {
            let lease = if i == 3 { &stale } else { lease };
            Renewal::new(lease, Duration::from_secs(60))
        })
        .collect();
    let answers = LockBackend::extend_batch(&backend, &renewals);
    assert_eq!(answers.len(), 5);
    for (i, answer) in answers.iter().enumerate() {
        match (i, answer) {
            (1, Err(Error::Backend(err))) => {
                assert_eq!(err.kind(), BackendErrorKind::Transient, "{err}");
                assert_eq!(err.key(), keys[1].as_str());
                assert!(
                    err.to_string().contains("locked by another session"),
                    "{err}"
                );
            }
            (3, Ok(ExtendOutcome::NotHeld)) => {}
            (0 | 2 | 4, Ok(ExtendOutcome::Extended { expires_at })) => {
                assert!(*expires_at > leases[i].expires_at, "renewed for longer");
            }
            (i, other) => panic!("renewal {i}: {other:?}"),
        }
    }
    psql.execute("ROLLBACK");
    let again = LockBackend::extend_batch(&backend, &renewals[1..2]);
    assert!(
        matches!(again.as_slice(), [Ok(ExtendOutcome::Extended { .. })]),
        "{again:?}"
    );
}
