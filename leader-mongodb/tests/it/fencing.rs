//! Fencing tokens never go back, even when the lock document is lost — deleted
//! by an operator's cleanup or a TTL index, or replaced by an older copy from a backup.

use std::time::Duration;

use crate::common::{Raw, config, uri};
use leader_core::{
    AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken, ReleaseRequest,
};
use leader_mongodb::MongoBackend;
use leader_testkit::fresh_name;
use mongodb::bson::{Bson, doc};

const COLLECTION: &str = "fencing";

/// Acquires and releases `key` once; checks the token is above every earlier one.
fn cycle(backend: &MongoBackend, key: &LockName, seen: &mut Vec<u64>) {
    let request = AcquireRequest::new(key, OwnerToken::random(), "node", Duration::from_secs(30));
    let lease = match LockBackend::try_acquire(backend, request).unwrap() {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("expected to acquire {key}, got {other:?}"),
    };
    LockBackend::release(backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    let highest = seen.iter().copied().max().unwrap_or(0);
    assert!(
        lease.fencing_token > highest,
        "token {} after {seen:?}",
        lease.fencing_token
    );
    seen.push(lease.fencing_token);
}

#[test]
fn a_deleted_or_restored_lock_document_never_makes_a_token_go_back() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let raw = Raw::connect(&uri);
    let key = fresh_name("fence");
    let mut seen = Vec::new();
    for _ in 0..3 {
        cycle(&backend, &key, &mut seen);
    }
    let backup = raw.find(COLLECTION, key.as_str()).unwrap();

    // An operator's cleanup (or a TTL index) deletes the document.
    raw.run({
        let id = key.as_str().to_owned();
        move |client| async move {
            Raw::collection(&client, COLLECTION)
                .delete_one(doc! { "_id": id })
                .await
                .unwrap();
        }
    });
    for _ in 0..3 {
        cycle(&backend, &key, &mut seen);
    }

    // A restore from backup puts back the older document, with its older token.
    raw.replace(COLLECTION, backup);
    for _ in 0..3 {
        cycle(&backend, &key, &mut seen);
    }

    // ... or one whose counter is far behind.
    let mut small = raw.find(COLLECTION, key.as_str()).unwrap();
    small.insert("fencing_token", Bson::Int64(7));
    raw.replace(COLLECTION, small);
    cycle(&backend, &key, &mut seen);
}
