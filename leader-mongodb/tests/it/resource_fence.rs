//! Fencing at the resource (`leader_mongodb::fence`), what only MongoDB's fence has: a
//! first insert, a missing document, a document written before fencing, a corrupt or a
//! named fence field. The fenced updates go to a plain collection through the driver. That
//! a holder whose lease ran out cannot overwrite what the next holder wrote is tested with
//! real electors, beside Redis's fence, by the facade's `leader/tests/resource_fence.rs`.

use crate::common::{Raw, uri};
use leader_mongodb::fence::{Fence, FenceError, FenceOutcome};
use leader_testkit::fresh_name;
use mongodb::bson::{Bson, Document, doc};

const REPORTS: &str = "resource_fence_reports";

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
