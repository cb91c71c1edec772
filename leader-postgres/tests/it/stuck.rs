//! A statement stuck behind another session's row lock ends on the server when the
//! caller's operation timeout ends: no server process is left working for a caller that
//! gave up.

use std::time::{Duration, Instant};

use crate::common::{Raw, assert_backend_error, config, must_acquire, url};
use leader_core::{LockBackend, LockName, Renewal};
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
    let extended = LockBackend::extend(
        &backend,
        Renewal::new(&lease, Duration::from_secs(30)).with_db_time(true),
    );
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
    let again = LockBackend::extend(
        &backend,
        Renewal::new(&lease, Duration::from_secs(30)).with_db_time(true),
    )
    .unwrap();
    assert!(
        matches!(again, leader_core::ExtendOutcome::Extended { .. }),
        "{again:?}"
    );
}

/// A batch renewal is one statement that skips a row another session holds locked: that
/// lease's answer is a transient error at once, and every other lease of the batch is
/// renewed — none waits for the locked row (the renewal driver renews that lease again
/// alone, see the next test).
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

/// Another session holding the row of a lease's lock for a moment (a contender's refused
/// acquire does, until it commits; a tenant batch holds hundreds; here a psql session holds
/// it for about a second) neither ends the lease nor frees the lock under the running
/// action: the blocking renewal driver's batch skips the row, and the lease is then renewed
/// on its own, waiting for the row, well within its deadline.
#[test]
fn a_contenders_row_lock_does_not_end_an_auto_extended_lease() {
    use leader_blocking::LeaderElector;
    use leader_core::{LeaderElectionOptions, LeaderRunResult};
    let Some(url) = url() else {
        return;
    };
    let table = "stuck_renewal_locks";
    let application = format!("renewal-{}", std::process::id());
    let named = format!("{url}?application_name={application}");
    let backend = PostgresBackend::connect_with(&named, config(table)).unwrap();
    let lease_time = Duration::from_secs(3);
    let options = LeaderElectionOptions::default()
        .with_wait_time(Duration::ZERO)
        .with_lease_time(lease_time)
        .with_auto_extend(true);
    let elector = LeaderElector::new(backend, options).unwrap();
    let name: LockName = fresh_name("renewed");
    let psql = Raw::connect(&url);
    let observer = Raw::connect(&url);

    let result = elector.run_if_leader_with(name.as_str(), |lease| {
        // The row is taken while the lease is young, so the next renewal (one interval,
        // a second, after the acquire) finds it locked.
        psql.execute(&format!(
            "BEGIN; SELECT * FROM {table} WHERE name = '{name}' FOR UPDATE"
        ));
        let locked_at = Instant::now();
        // Until the renewal meets the row: a renewal waiting for it, or the lease lost.
        wait_until(
            "a renewal to meet the locked row",
            Duration::from_secs(10),
            || lease.is_lost() || stuck(&observer, &application) > 0,
        );
        assert!(
            !lease.is_lost(),
            "the lease was lost {:?} after a contender's session locked its row, with {:?} of it left",
            locked_at.elapsed(),
            lease.deadline().saturating_duration_since(Instant::now()),
        );
        psql.execute("ROLLBACK");
        // The renewal that waited goes through, and so does the next one.
        let before = lease.deadline();
        wait_until("the renewal to go through", Duration::from_secs(5), || {
            lease.is_lost() || lease.deadline() > before
        });
        let renewed = lease.deadline();
        wait_until("the next renewal", Duration::from_secs(5), || {
            lease.is_lost() || lease.deadline() > renewed
        });
        assert!(!lease.is_lost(), "lost after the row was unlocked");
        Ok::<_, leader_core::Error>(())
    });
    match result {
        Ok(LeaderRunResult::Elected { lease_lost, .. }) => assert!(!lease_lost),
        other => panic!("expected to lead: {other:?}"),
    }
    assert!(elector.state(name.as_str()).unwrap().leader().is_none());
}
