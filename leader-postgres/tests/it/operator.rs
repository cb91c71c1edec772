//! The operator's calls on PostgreSQL: `list` pages through exactly the held locks under a
//! prefix (blocking and async, one range of the primary key, metacharacters literal). How a
//! force release reaches the electors (the holder's loses its lease at its next renewal, the
//! `NOTIFY` wakes the waiters of other nodes) is checked by the facade's
//! `leader/tests/operator.rs`, on every backend it applies to.

use crate::common::{config, url};
use leader_postgres::PostgresBackend;

const TABLE: &str = "operator_locks";

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
// It reads the plan of the backend's own listing statement, which only the `unstable-raw`
// feature shows (the test command turns every feature on).
#[cfg(feature = "unstable-raw")]
#[test]
fn a_listing_reads_one_range_of_the_primary_key() {
    use crate::common::Raw;
    use leader_core::{ListRequest, LockBackend};

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
    let list = leader_postgres::raw::list_statement(TABLE).unwrap();
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
