//! The operator's calls on MongoDB: `list` pages through exactly the held locks under a
//! prefix (blocking and async, one range of the `_id` index, metacharacters literal), and
//! `force_release` makes the holder's elector lose its lease at its next renewal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{config, private_server, uri, uri_of};
use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, ForceReleaseOutcome, LeaderElectionOptions,
    LeaseMode, ListPage, ListRequest, LockBackend, LockName, LockStatus, OwnerToken,
    ReleaseOutcome,
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

/// Every page of `prefix`, by `limit`, through `list`: the names in order, and the pages'
/// sizes.
fn all_pages(
    prefix: &str,
    limit: usize,
    mut list: impl FnMut(&ListRequest) -> ListPage,
) -> (Vec<String>, Vec<usize>) {
    let (mut names, mut sizes) = (Vec::new(), Vec::new());
    let mut request = ListRequest::new(prefix).with_limit(limit);
    loop {
        let page = list(&request);
        sizes.push(page.locks.len());
        for state in &page.locks {
            assert_eq!(state.status(), LockStatus::Occupied);
            names.push(state.lock_name().to_owned());
        }
        match page.next {
            Some(cursor) => request = request.after(cursor),
            None => return (names, sizes),
        }
        assert!(sizes.len() < 100, "the listing does not end");
    }
}

#[test]
fn sixty_locks_list_in_pages_of_seven_blocking_and_async() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let base = fresh_name("sixty");
    let prefix = format!("{base}:");
    let mut expected: Vec<String> = (0..60).map(|i| format!("{prefix}{i:02}")).collect();
    // Under the prefix too: the prefix itself as a name, and one past every digit.
    expected.push(prefix.clone());
    expected.push(format!("{prefix}\u{10FFFF}"));
    expected.sort();
    for held in &expected {
        acquire(&backend, &name(held.clone()));
    }
    // Beside the prefix: below it, just above its range (`;` follows `:`), and a lock
    // under it that is released.
    for beside in [base.to_string(), format!("{base};"), format!("{base}9")] {
        acquire(&backend, &name(beside));
    }
    let released = acquire(&backend, &name(format!("{prefix}released")));
    assert_eq!(
        LockBackend::release(&backend, &released, Duration::ZERO).unwrap(),
        ReleaseOutcome::Released
    );

    let (blocking, sizes) = all_pages(&prefix, 7, |request| {
        LockBackend::list(&backend, request).unwrap()
    });
    assert_eq!(blocking, expected);
    assert_eq!(sizes, [7, 7, 7, 7, 7, 7, 7, 7, 6]);

    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (on_tokio, _) = all_pages(&prefix, 7, |request| {
        tokio
            .block_on(AsyncLockBackend::list(&backend, request))
            .unwrap()
    });
    assert_eq!(on_tokio, expected);
    let (on_smol, _) = all_pages(&prefix, 7, |request| {
        smol::block_on(AsyncLockBackend::list(&backend, request)).unwrap()
    });
    assert_eq!(on_smol, expected);
}

#[test]
fn a_prefix_with_metacharacters_matches_literally() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let base = fresh_name("meta");
    let prefix = format!("{base}:a.*[x]%_");
    let expected = [
        prefix.clone(),
        format!("{prefix}_"),
        format!("{prefix}tail"),
    ];
    // What a regex (`.`, `*`, `[x]`) or a LIKE pattern (`%`, `_`) would also match.
    let decoys = [
        format!("{base}:ab*[x]%_"),
        format!("{base}:a.[x]%_"),
        format!("{base}:a.*x%_"),
        format!("{base}:a.*[x]Z_"),
        format!("{base}:a.*[x]%Z"),
        format!("{base}:a"),
    ];
    for held in expected.iter().chain(&decoys) {
        acquire(&backend, &name(held.clone()));
    }
    let (names, _) = all_pages(&prefix, 2, |request| {
        LockBackend::list(&backend, request).unwrap()
    });
    assert_eq!(names, expected);
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
