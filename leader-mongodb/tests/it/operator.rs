//! The operator's calls on MongoDB: `list` pages through exactly the held locks under a
//! prefix (blocking and async, one range of the `_id` index, metacharacters literal). How a
//! force release reaches the holder's elector is checked on every backend by the facade's
//! `leader/tests/operator.rs`.

use crate::common;

use std::time::Duration;

use crate::common::{config, private_server, uri, uri_of};
use leader_core::{
    AcquireOutcome, AcquireRequest, ForceReleaseOutcome, ListRequest, LockBackend, LockName,
    OwnerToken,
};
use leader_mongodb::MongoBackend;
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
