//! The operator's calls on MongoDB: `list` pages through exactly the held locks under a
//! prefix (blocking and async, one range of the `_id` index, metacharacters literal), and
//! `force_release` makes the holder's elector lose its lease at its next renewal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{config, private_server, uri, uri_of};
use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, ForceReleaseOutcome, LeaderElectionOptions, LeaseMode,
    ListRequest, LockBackend, LockName, OwnerToken,
};
use leader_mongodb::MongoBackend;
use leader_testkit::fresh_name;
use mongodb::bson::doc;

const COLLECTION: &str = "operator_locks";

fn name(text: String) -> LockName {
    LockName::new(text).unwrap()
}

fn acquire(backend: &MongoBackend, key: &LockName) -> leader_core::Lease {
    let request = AcquireRequest::new(key, OwnerToken::random(), "node", Duration::from_secs(60));
    match LockBackend::try_acquire(backend, request) {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key}: {other:?}"),
    }
}

#[test]
fn sixty_locks_list_in_pages_of_seven_blocking_and_async() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    leader_testkit::checks::sixty_locks_list_in_pages_of_seven_blocking_and_async(&backend);
}

#[test]
fn a_prefix_with_metacharacters_matches_literally() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    leader_testkit::checks::a_prefix_with_metacharacters_matches_literally(&backend);
}

/// With `notablescan` set the server refuses a query that would read the whole
/// collection: listing still works, so its filter is a range of the `_id` index.
#[test]
fn a_listing_reads_one_range_of_the_id_index() {
    let Some(server) = private_server() else {
        return;
    };
    let uri = uri_of(&server);
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let key = name("scan:one".to_owned());
    acquire(&backend, &key);
    let raw = common::Raw::connect(&uri);
    raw.run(|client| async move {
        let admin = client.database("admin");
        admin
            .run_command(doc! { "setParameter": 1, "notablescan": true })
            .await
            .unwrap();
        let scan = common::Raw::collection(&client, COLLECTION)
            .find_one(doc! { "owner": { "$ne": null } })
            .await;
        assert!(scan.is_err(), "notablescan must refuse a full scan");
    });
    for prefix in ["scan:", ""] {
        let page = LockBackend::list(&backend, &ListRequest::new(prefix)).unwrap();
        assert_eq!(page.locks.len(), 1, "{prefix:?}: {page:?}");
    }
    let scan = ListRequest::new("scan:");
    let after_one = leader_core::ListCursor::tagged("mongodb", &scan, "scan:one");
    let page = LockBackend::list(&backend, &scan.clone().after(after_one)).unwrap();
    assert!(page.locks.is_empty());
    assert!(matches!(
        LockBackend::force_release(&backend, &key).unwrap(),
        ForceReleaseOutcome::Released(_)
    ));
}

#[test]
fn force_release_makes_the_holder_lose_its_lease_at_its_next_renewal() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
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
    assert!(guard.is_lost());

    // The lock is free, and the next holder's token is above the forced one's.
    let other = LeaderElector::new(backend, LeaderElectionOptions::default()).unwrap();
    let next = other
        .acquire(&lock, LeaseMode::Watchdog { timeout })
        .unwrap();
    assert!(next.fencing_token() > guard.fencing_token());
    drop(guard);
    next.release().unwrap();
}
