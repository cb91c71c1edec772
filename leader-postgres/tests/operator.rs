//! The operator's calls on PostgreSQL: `list` pages through exactly the held locks under a
//! prefix (blocking and async, one range of the primary key, metacharacters literal), and
//! `force_release` makes the holder's elector lose its lease at its next renewal and wakes
//! the waiters of other nodes with the release's `NOTIFY`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{Raw, config, must_acquire, url};
use leader_blocking::LeaderElector;
use leader_core::{
    Backend, ForceReleaseOutcome, LeaderElectionOptions, LeaseMode, ListRequest, LockBackend,
};
use leader_postgres::PostgresBackend;
use leader_testkit::fresh_name;

const TABLE: &str = "operator_locks";
const LONG: Duration = Duration::from_secs(60);

#[test]
fn sixty_locks_list_in_pages_of_seven_blocking_and_async() {
    let Some(url) = url() else { return };
    let backend = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    leader_testkit::checks::sixty_locks_list_in_pages_of_seven_blocking_and_async(&backend);
}

#[test]
fn a_prefix_with_metacharacters_matches_literally() {
    let Some(url) = url() else { return };
    let backend = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    leader_testkit::checks::a_prefix_with_metacharacters_matches_literally(&backend);
}

/// In a database whose collation is not `C`, on a table the backend made: the listing's
/// generic plan (the one a prepared statement settles on) can read one range of the
/// primary key, both bounds index conditions, in index order (no sort). Scans other than
/// an index scan are turned off, since on an empty table they cost less.
#[test]
fn a_listing_reads_one_range_of_the_primary_key() {
    let Some(url) = url() else { return };
    let admin = Raw::connect(&url);
    let database = format!("collated_{:08x}", rand::random::<u32>());
    admin.execute(&format!(
        "CREATE DATABASE {database} TEMPLATE template0 LC_COLLATE 'C.utf8' LC_CTYPE 'C.utf8'"
    ));
    let (root, _) = url.rsplit_once('/').unwrap();
    let url = format!("{root}/{database}");
    let backend = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    let page = LockBackend::list(&backend, &ListRequest::new("scan:")).unwrap();
    assert!(page.locks.is_empty());

    let raw = Raw::connect(&url);
    let collation =
        raw.rows("SELECT datcollate FROM pg_database WHERE datname = current_database()");
    assert_eq!(collation[0].get::<_, String>(0), "C.utf8");
    let list = leader_postgres::__private::list_statement(TABLE).unwrap();
    raw.execute(&format!(
        "SET plan_cache_mode = force_generic_plan;
        SET enable_seqscan = off;
        SET enable_bitmapscan = off;
        PREPARE listing (text, text, text, bigint) AS {list}"
    ));
    let plan: Vec<String> = raw
        .rows("EXPLAIN EXECUTE listing ('scan:', '', 'scan;', 8)")
        .iter()
        .map(|row| row.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains(&format!("Index Scan using {TABLE}_pkey")),
        "{plan}"
    );
    assert!(!plan.contains("Sort"), "{plan}");
    let bounds = plan
        .lines()
        .find(|line| line.contains("Index Cond"))
        .unwrap_or_else(|| panic!("no index condition: {plan}"));
    for bound in ["name >= $1", "name > $2", "name < $3"] {
        assert!(bounds.contains(bound), "{bound} missing: {plan}");
    }
    drop(backend);
    drop(raw);
    admin.execute(&format!("DROP DATABASE {database} WITH (FORCE)"));
}

#[test]
fn force_release_makes_the_holder_lose_its_lease_at_its_next_renewal() {
    let Some(url) = url() else { return };
    let backend = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    let options = LeaderElectionOptions::default().with_node_id("node-a");
    let elector = LeaderElector::new(backend.clone(), options).unwrap();
    let lock = fresh_name("forced").to_string();
    // Renewed every 3 s: without the renewal finding it gone, the lease would still be
    // certainly held for 6 s after the force release.
    let timeout = Duration::from_secs(9);
    let guard = elector
        .acquire(&lock, LeaseMode::Watchdog { timeout })
        .unwrap();

    let forced_at = Instant::now();
    match elector.force_release(&lock).unwrap() {
        ForceReleaseOutcome::Released(holder) => {
            assert_eq!(holder.leader_id, "node-a");
            assert_eq!(holder.fencing_token, guard.fencing_token());
        }
        other => panic!("the guard's lock must be force-released: {other:?}"),
    }
    assert!(
        guard.context().wait_lost_timeout(Duration::from_secs(20)),
        "the guard never heard of the force release"
    );
    let noticed = forced_at.elapsed();
    assert!(
        noticed < timeout * 2 / 3,
        "lost after {noticed:?}: by its deadline, not at its next renewal"
    );

    // The lock is free, and the next holder's token is above the forced one's.
    let other = LeaderElector::new(backend, LeaderElectionOptions::default()).unwrap();
    let next = other
        .acquire(&lock, LeaseMode::Watchdog { timeout })
        .unwrap();
    assert!(next.fencing_token() > guard.fencing_token());
    drop(guard);
    next.release().unwrap();
}

/// Starts `backend`'s `LISTEN` session and waits until it is up.
fn listening(backend: &PostgresBackend) {
    assert!(backend.release_events().is_some());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !backend.is_listening() {
        assert!(Instant::now() < deadline, "LISTEN did not come up");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Node A holds a lock; B (its own backend) waits in `run_if_leader`; an operator (a
/// third backend) force-releases it once B's backoff has grown. The time from the force
/// release to B's action.
fn one_forced_handoff(url: &str) -> Duration {
    let holder = PostgresBackend::connect_with(url, config(TABLE)).unwrap();
    let waiter = PostgresBackend::connect_with(url, config(TABLE)).unwrap();
    let operator = PostgresBackend::connect_with(url, config(TABLE)).unwrap();
    listening(&waiter);
    let key = fresh_name("handoff");
    must_acquire(&holder, &key, "holder", LONG);
    let options = LeaderElectionOptions::default().with_wait_time(Duration::from_secs(10));
    let elector = LeaderElector::new(waiter, options).unwrap();
    let forcer = {
        let key = key.clone();
        std::thread::spawn(move || {
            // Long enough for the waiter's backoff to reach delays of 64 ms and more.
            std::thread::sleep(Duration::from_millis(400));
            let forced_at = Instant::now();
            let outcome = LockBackend::force_release(&operator, &key).unwrap();
            assert!(matches!(outcome, ForceReleaseOutcome::Released(_)));
            forced_at
        })
    };
    let ran_at = elector
        .run_if_leader(key.as_str(), Instant::now)
        .unwrap()
        .expect("the waiter takes over");
    let forced_at = forcer.join().unwrap();
    ran_at.saturating_duration_since(forced_at)
}

#[test]
fn a_force_release_wakes_the_waiters_of_other_nodes() {
    let Some(url) = url() else { return };
    // The NOTIFY itself: only another backend's LISTEN session can hear it.
    let operator = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    let waiter = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    listening(&waiter);
    let key = fresh_name("notify");
    let free = waiter.release_events().unwrap().listen(key.as_str());
    assert_eq!(
        LockBackend::force_release(&operator, &key).unwrap(),
        ForceReleaseOutcome::NotHeld
    );
    assert!(
        !free.wait_timeout(Duration::from_millis(200)),
        "forcing a free lock notifies nobody"
    );
    must_acquire(&operator, &key, "holder", LONG);
    let woken = waiter.release_events().unwrap().listen(key.as_str());
    assert!(matches!(
        LockBackend::force_release(&operator, &key).unwrap(),
        ForceReleaseOutcome::Released(_)
    ));
    assert!(
        woken.wait_timeout(Duration::from_secs(2)),
        "the force release sent no NOTIFY"
    );

    // And a waiting elector takes over at once, well before its polling would
    // (250 ms between attempts by then).
    let mut handoffs: Vec<Duration> = (0..3).map(|_| one_forced_handoff(&url)).collect();
    handoffs.sort();
    eprintln!("force-release handoffs: {handoffs:?}");
    assert!(
        handoffs[1] < Duration::from_millis(100),
        "took over {:?} after the force release",
        handoffs[1]
    );
}
