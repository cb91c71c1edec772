//! The stored document: its fields and types, what release leaves behind, node ids that
//! look like field paths, and a backend built on a caller's client.

use std::time::Duration;

use crate::common::{DATABASE, Raw, config, uri};
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, LockBackend, LockName, LockStatus,
    OwnerToken, ReleaseOutcome, ReleaseRequest,
};
use leader_mongodb::MongoBackend;
use leader_testkit::fresh_name;
use mongodb::bson::Bson;

const COLLECTION: &str = "layout";

fn request<'a>(key: &'a LockName, owner: OwnerToken, node: &'a str) -> AcquireRequest<'a> {
    AcquireRequest::new(key, owner, node, Duration::from_secs(30)).with_db_time(true)
}

#[test]
fn one_document_per_lock_kept_across_release_with_the_node_id_verbatim() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let raw = Raw::connect(&uri);
    let key = fresh_name("layout");
    let owner = OwnerToken::random();
    let node = "$node.with.$dollars";
    let AcquireOutcome::Acquired(lease) =
        LockBackend::try_acquire(&backend, request(&key, owner, node)).unwrap()
    else {
        panic!("not acquired")
    };
    assert_eq!(lease.leader_id, node);

    let doc = raw.find(COLLECTION, key.as_str()).unwrap();
    let mut fields: Vec<&str> = doc.keys().map(String::as_str).collect();
    fields.sort_unstable();
    let expected = [
        "_id",
        "acquired_at",
        "expires_at",
        "fencing_token",
        "leader_id",
        "owner",
    ];
    assert_eq!(fields, expected, "exactly the six fields, in any order");
    assert_eq!(doc.get_str("_id").unwrap(), key.as_str());
    assert_eq!(doc.get_str("owner").unwrap(), owner.to_string());
    assert_eq!(doc.get_str("leader_id").unwrap(), node);
    let acquired_ms = doc.get_datetime("acquired_at").unwrap().timestamp_millis();
    let token = doc.get_i64("fencing_token").unwrap();
    assert_eq!(u64::try_from(token).unwrap(), lease.fencing_token);
    assert!(
        token >= acquired_ms * 1000,
        "a new lock's first token is the server's clock in microseconds: {token}"
    );
    assert!(doc.get_datetime("expires_at").is_ok());

    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );
    let released = raw.find(COLLECTION, key.as_str()).unwrap();
    assert_eq!(released.get("owner"), Some(&Bson::Null));
    assert_eq!(released.get_i64("fencing_token").unwrap(), token);
    assert_eq!(
        LockBackend::state(&backend, &key).unwrap().status(),
        LockStatus::Empty
    );

    let AcquireOutcome::Acquired(next) =
        LockBackend::try_acquire(&backend, request(&key, OwnerToken::random(), "b")).unwrap()
    else {
        panic!("not acquired after release")
    };
    assert!(next.fencing_token > lease.fencing_token);
}

#[test]
fn a_backend_on_the_callers_client_works_from_tokio_and_from_plain_threads() {
    let Some(uri) = uri() else { return };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = tokio.block_on(mongodb::Client::with_uri_str(&uri)).unwrap();
    let cfg = config(COLLECTION);
    let backend = MongoBackend::from_client(client, cfg).unwrap();
    assert_eq!(backend.database_name(), DATABASE);
    let key = fresh_name("from-client");
    let lease = tokio.block_on(async {
        match AsyncLockBackend::try_acquire(&backend, request(&key, OwnerToken::random(), "a"))
            .await
            .unwrap()
        {
            AcquireOutcome::Acquired(lease) => lease,
            other => panic!("{other:?}"),
        }
    });
    let holder = LockBackend::state(&backend, &key).unwrap();
    assert_eq!(
        holder.leader().map(|l| l.fencing_token),
        Some(lease.fencing_token)
    );
    assert_eq!(
        smol::block_on(AsyncLockBackend::release(
            &backend,
            ReleaseRequest::new(&lease, Duration::ZERO)
        ))
        .unwrap(),
        ReleaseOutcome::Released
    );
    drop(backend);
    tokio.shutdown_background();
}
