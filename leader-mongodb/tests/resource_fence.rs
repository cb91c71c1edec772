//! Fencing at the resource (`leader_mongodb::fence`): a holder whose lease ran out cannot
//! overwrite what the next holder wrote. Real acquisitions of one lock hand out the tokens;
//! the fenced updates go to a plain collection through the driver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{Raw, config, uri};
use leader_core::{AcquireOutcome, AcquireRequest, Lease, LockBackend, LockName, OwnerToken};
use leader_mongodb::MongoBackend;
use leader_mongodb::fence::{Fence, FenceError, FenceOutcome};
use leader_testkit::fresh_name;
use mongodb::bson::{Bson, Document, doc};

const LOCKS: &str = "resource_fence_locks";
const REPORTS: &str = "resource_fence_reports";

/// Acquires `key` for `holder`, waiting (up to 10 s) for an earlier lease to run out.
fn acquire(backend: &MongoBackend, key: &LockName, holder: &str, lease_time: Duration) -> Lease {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let request = AcquireRequest::new(key, OwnerToken::random(), holder, lease_time);
        match LockBackend::try_acquire(backend, request).unwrap() {
            AcquireOutcome::Acquired(lease) => return lease,
            AcquireOutcome::Held(_) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => panic!("{holder} could not acquire {key}: {other:?}"),
        }
    }
}

/// A fenced `update_one` of the report `id` to `value`, with or without upsert.
fn write(raw: &Raw, id: &str, token: u64, value: &str, upsert: bool) -> FenceOutcome {
    let fence = Fence::new(token).unwrap();
    let (filter, update) = (
        fence.filter(doc! { "_id": id }),
        fence.set(doc! { "value": value }),
    );
    let result = raw.run(move |client| async move {
        Raw::collection(&client, REPORTS)
            .update_one(filter, update)
            .upsert(upsert)
            .await
    });
    FenceOutcome::from_update(result).unwrap()
}

fn stored(raw: &Raw, id: &str) -> Option<Document> {
    raw.find(REPORTS, id)
}

#[test]
fn a_stale_holders_late_write_is_rejected_and_the_newer_value_stays() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(LOCKS)).unwrap();
    let raw = Raw::connect(&uri);
    let key = fresh_name("resource-fence");
    let id = key.as_str();

    let a = acquire(&backend, &key, "node-a", Duration::from_millis(500));
    let ta = a.fencing_token;
    // A fresh resource accepts the first write (an insert); the same holder writes again.
    assert_eq!(write(&raw, id, ta, "a-1", true), FenceOutcome::Accepted);
    assert_eq!(write(&raw, id, ta, "a-2", true), FenceOutcome::Accepted);

    // A stalls past its lease; B takes over and writes.
    let b = acquire(&backend, &key, "node-b", Duration::from_secs(30));
    let tb = b.fencing_token;
    assert!(tb > ta, "{ta} then {tb}");
    assert_eq!(write(&raw, id, tb, "b-1", true), FenceOutcome::Accepted);

    // A wakes up and writes with its old token, as an upsert (the server answers with a
    // duplicate key) and as a plain update (nothing matches): refused both times.
    assert_eq!(write(&raw, id, ta, "a-late", true), FenceOutcome::Rejected);
    assert_eq!(write(&raw, id, ta, "a-late", false), FenceOutcome::Rejected);
    let doc = stored(&raw, id).unwrap();
    assert_eq!(doc.get_str("value").unwrap(), "b-1");
    let fence = Fence::new(ta).unwrap();
    assert_eq!(fence.highest_seen(&doc), Ok(Some(tb)));

    // B, still holding, keeps writing.
    assert!(write(&raw, id, tb, "b-2", false).is_accepted());
    assert_eq!(stored(&raw, id).unwrap().get_str("value").unwrap(), "b-2");
    LockBackend::release(&backend, &b, Duration::ZERO).unwrap();
}

#[test]
fn a_stale_first_insert_loses_to_a_newer_one() {
    let Some(uri) = uri() else { return };
    let raw = Raw::connect(&uri);
    let id = fresh_name("resource-fence-insert").as_str().to_owned();
    // Two holders insert a report that does not exist yet; the newer one got there first.
    assert_eq!(write(&raw, &id, 20, "newer", true), FenceOutcome::Accepted);
    assert_eq!(write(&raw, &id, 10, "older", true), FenceOutcome::Rejected);
    assert_eq!(
        stored(&raw, &id).unwrap().get_str("value").unwrap(),
        "newer"
    );
}

#[test]
fn without_upsert_a_missing_document_is_told_apart_by_reading_it() {
    let Some(uri) = uri() else { return };
    let raw = Raw::connect(&uri);
    let id = fresh_name("resource-fence-missing").as_str().to_owned();
    assert_eq!(write(&raw, &id, 5, "x", false), FenceOutcome::Rejected);
    assert_eq!(stored(&raw, &id), None, "missing, not fenced off");
}

#[test]
fn a_document_written_before_fencing_accepts_the_first_fenced_write() {
    let Some(uri) = uri() else { return };
    let raw = Raw::connect(&uri);
    let id = fresh_name("resource-fence-legacy").as_str().to_owned();
    raw.replace(REPORTS, doc! { "_id": &id, "value": "legacy" });
    assert_eq!(write(&raw, &id, 5, "fenced", true), FenceOutcome::Accepted);
    let doc = stored(&raw, &id).unwrap();
    assert_eq!(doc.get_str("value").unwrap(), "fenced");
    assert_eq!(doc.get_i64("fence").unwrap(), 5);
}

#[test]
fn a_fence_that_is_not_a_token_refuses_writes_and_reads_as_a_typed_error() {
    let Some(uri) = uri() else { return };
    let raw = Raw::connect(&uri);
    let id = fresh_name("resource-fence-corrupt").as_str().to_owned();
    raw.replace(
        REPORTS,
        doc! { "_id": &id, "value": "kept", "fence": "not-a-token" },
    );

    for upsert in [true, false] {
        assert_eq!(write(&raw, &id, 5, "x", upsert), FenceOutcome::Rejected);
    }
    let doc = stored(&raw, &id).unwrap();
    assert_eq!(doc.get_str("value").unwrap(), "kept");
    let err = Fence::new(5).unwrap().highest_seen(&doc).unwrap_err();
    assert!(
        matches!(&err, FenceError::CorruptFence { field, found }
            if field == "fence" && found.contains("not-a-token")),
        "{err:?}"
    );
}

#[test]
fn the_fence_field_can_be_named() {
    let Some(uri) = uri() else { return };
    let raw = Raw::connect(&uri);
    let id = fresh_name("resource-fence-field").as_str().to_owned();
    let write = |token: u64, value: &str| {
        let fence = Fence::new(token).unwrap().with_field("meta.lease");
        let (filter, update) = (
            fence.filter(doc! { "_id": &id }),
            fence.set(doc! { "value": value }),
        );
        FenceOutcome::from_update(raw.run(move |client| async move {
            Raw::collection(&client, REPORTS)
                .update_one(filter, update)
                .upsert(true)
                .await
        }))
        .unwrap()
    };
    assert_eq!(write(7, "seven"), FenceOutcome::Accepted);
    assert_eq!(write(6, "six"), FenceOutcome::Rejected);
    let doc = stored(&raw, &id).unwrap();
    assert_eq!(doc.get_str("value").unwrap(), "seven");
    assert_eq!(
        doc.get_document("meta").unwrap().get("lease"),
        Some(&Bson::Int64(7))
    );
}
