//! Read/write locks on MongoDB beyond the contract suite: the stored document and where it
//! lives, documents of the wrong shape, tokens floored by the server's clock, one command
//! per uncontended acquire, and release notifications through the change stream.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::{Raw, config, uri};
use leader_core::{
    AcquireRequest, Backend, ForceReleaseOutcome, Lease, ListRequest, LockBackend, LockName,
    MaxReaders, OwnerToken, ReleaseOutcome, ReleaseRequest, Role, SharedLockBackend, SharedOutcome,
    SharedRequest,
};
use leader_mongodb::MongoBackend;
use leader_testkit::fresh_name;
use mongodb::Client;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::event::EventHandler;
use mongodb::event::command::CommandEvent;
use mongodb::options::ClientOptions;

const COLLECTION: &str = "rw_locks";
/// Where this backend keeps the read/write locks of `COLLECTION`.
const SHARED: &str = "rw_locks_shared";

fn ask(
    backend: &MongoBackend,
    role: Role,
    key: &LockName,
    owner: OwnerToken,
    node: &str,
) -> SharedOutcome {
    let request = AcquireRequest::new(key, owner, node, Duration::from_secs(30));
    SharedLockBackend::try_acquire_shared(
        backend,
        SharedRequest::new(request, role, MaxReaders::DEFAULT),
    )
    .unwrap()
}

fn granted(outcome: SharedOutcome) -> Lease {
    match outcome {
        SharedOutcome::Acquired(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

#[test]
fn one_document_per_name_in_its_own_collection_never_seen_as_an_exclusive_lock() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let raw = Raw::connect(&uri);
    let key = fresh_name("rw-layout");
    let node = "$node.with.$dollars";
    let reader = granted(ask(&backend, Role::Read, &key, OwnerToken::random(), node));
    assert_eq!(reader.leader_id, node);
    let writer = OwnerToken::random();
    assert!(matches!(
        ask(&backend, Role::Write, &key, writer, "w"),
        SharedOutcome::Queued(_)
    ));

    assert!(
        raw.find(COLLECTION, key.as_str()).is_none(),
        "nothing in the lock collection"
    );
    let doc = raw.find(SHARED, key.as_str()).unwrap();
    let mut fields: Vec<&str> = doc.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        ["_id", "counter", "intent", "readers", "releases", "writer"]
    );
    assert_eq!(doc.get("writer"), Some(&Bson::Null));
    let readers = doc.get_array("readers").unwrap();
    let Some(Bson::Document(first)) = readers.first() else {
        panic!("{doc:?}")
    };
    assert_eq!(first.get_str("leader_id").unwrap(), node);
    assert_eq!(first.get_str("owner").unwrap(), reader.owner.to_string());
    assert!(!first.get_bool("released").unwrap());
    let token = first.get_i64("fencing_token").unwrap();
    assert_eq!(u64::try_from(token).unwrap(), reader.fencing_token);
    assert_eq!(doc.get_i64("counter").unwrap(), token);
    let acquired_ms = first
        .get_datetime("acquired_at")
        .unwrap()
        .timestamp_millis();
    assert!(
        token >= acquired_ms * 1000,
        "a new name's first token is the server's clock in microseconds: {token}"
    );
    let intent = doc.get_document("intent").unwrap();
    assert_eq!(intent.get_str("owner").unwrap(), writer.to_string());

    // The exclusive lock's operations never see it.
    assert!(
        LockBackend::state(&backend, &key)
            .unwrap()
            .leader()
            .is_none()
    );
    let page = LockBackend::list(&backend, &ListRequest::new(key.as_str())).unwrap();
    assert!(page.locks.is_empty(), "{page:?}");
    assert_eq!(
        LockBackend::force_release(&backend, &key).unwrap(),
        ForceReleaseOutcome::NotHeld
    );
    assert_eq!(
        SharedLockBackend::state_shared(&backend, &key)
            .unwrap()
            .readers
            .len(),
        1
    );
}

/// A reader as this backend writes it, for planting documents.
fn holder(owner: OwnerToken) -> Document {
    let now = DateTime::now();
    doc! {
        "owner": owner.to_string(),
        "leader_id": "planted",
        "fencing_token": 5_i64,
        "acquired_at": now,
        "expires_at": DateTime::from_millis(now.timestamp_millis() + 60_000),
        "released": false,
    }
}

/// Documents in shapes this backend never writes: each call reports a permanent error
/// (acquire, state) or matches nothing (extend, release), and the document stays as it
/// was planted.
#[test]
fn a_document_of_the_wrong_shape_is_a_permanent_error_and_never_overwritten() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let raw = Raw::connect(&uri);
    let owner = OwnerToken::random();
    let mut reader_without_expiry = holder(owner);
    reader_without_expiry.remove("expires_at");
    let mut string_token = holder(owner);
    string_token.insert("fencing_token", "five");
    let base = |readers: Bson| {
        doc! {
            "counter": 5_i64, "releases": 0_i64, "writer": Bson::Null,
            "readers": readers, "intent": Bson::Null,
        }
    };
    let plants = [
        ("no counter", {
            let mut doc = base(Bson::Array(vec![]));
            doc.remove("counter");
            doc
        }),
        ("readers not an array", base(Bson::from("nobody"))),
        (
            "a reader without its expiry",
            base(Bson::Array(vec![Bson::Document(reader_without_expiry)])),
        ),
        (
            "a reader's token a string",
            base(Bson::Array(vec![Bson::Document(string_token)])),
        ),
        ("the writer a number", {
            let mut doc = base(Bson::Array(vec![]));
            doc.insert("writer", 1);
            doc
        }),
    ];
    for (what, planted) in plants {
        let key = fresh_name("rw-corrupt");
        let mut planted = planted;
        planted.insert("_id", key.as_str());
        raw.replace(SHARED, planted.clone());
        for role in [Role::Read, Role::Write] {
            let request = AcquireRequest::new(&key, owner, "n", Duration::from_secs(30));
            let err = SharedLockBackend::try_acquire_shared(
                &backend,
                SharedRequest::new(request, role, MaxReaders::DEFAULT),
            )
            .expect_err(what);
            assert!(!err.is_transient(), "{what}: {err:?}");
            assert_eq!(err.lock_key(), Some(key.as_str()), "{what}");
        }
        let err = SharedLockBackend::state_shared(&backend, &key).expect_err(what);
        assert!(!err.is_transient(), "{what}: {err:?}");
        let lease = Lease::new(
            key.clone(),
            owner,
            "n",
            5,
            std::time::SystemTime::now(),
            std::time::SystemTime::now(),
        );
        for role in [Role::Read, Role::Write] {
            let renewal = leader_core::Renewal::new(&lease, Duration::from_secs(30));
            assert_eq!(
                SharedLockBackend::extend_shared(&backend, renewal, role).unwrap(),
                leader_core::ExtendOutcome::NotHeld,
                "{what}"
            );
            assert_eq!(
                SharedLockBackend::release_shared(
                    &backend,
                    ReleaseRequest::new(&lease, Duration::ZERO),
                    role
                )
                .unwrap(),
                ReleaseOutcome::NotHeld,
                "{what}"
            );
        }
        assert_eq!(
            raw.find(SHARED, key.as_str()),
            Some(planted),
            "{what}: never overwritten"
        );
    }
}

/// A deleted read/write document (an operator's cleanup) never makes a token go back:
/// the next grant's token is at least the server's clock in microseconds.
#[test]
fn a_deleted_document_never_makes_a_token_go_back() {
    let Some(uri) = uri() else { return };
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let raw = Raw::connect(&uri);
    let key = fresh_name("rw-fence");
    let first = granted(ask(&backend, Role::Write, &key, OwnerToken::random(), "w"));
    let id = key.as_str().to_owned();
    raw.run(move |client| async move {
        Raw::collection(&client, SHARED)
            .delete_one(doc! { "_id": id })
            .await
            .unwrap();
    });
    // The floor is the server's clock in milliseconds × 1000: a token lost with the
    // document is below it once that clock has moved on a millisecond.
    let after = first.acquired_at + Duration::from_millis(1);
    leader_testkit::wait_until(
        "the server's clock to move on",
        Duration::from_secs(5),
        || raw.server_now() > after,
    );
    let second = granted(ask(&backend, Role::Read, &key, OwnerToken::random(), "r"));
    assert!(
        second.fencing_token > first.fencing_token,
        "{} after {}",
        second.fencing_token,
        first.fencing_token
    );
}

/// Counts the commands the driver sends, by name.
#[derive(Default)]
struct Commands {
    find_and_modify: AtomicUsize,
    all: AtomicUsize,
}

/// An uncontended read acquire and an uncontended write acquire are one command each on
/// the wire: a `findAndModify` (counted by the driver's command monitoring).
#[test]
fn an_uncontended_acquire_is_one_command() {
    let Some(uri) = uri() else { return };
    let commands = Arc::new(Commands::default());
    let seen = Arc::clone(&commands);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime.block_on(async move {
        let mut options = ClientOptions::parse(&uri).await.unwrap();
        options.command_event_handler = Some(EventHandler::callback(move |event| {
            if let CommandEvent::Started(started) = event {
                seen.all.fetch_add(1, Ordering::SeqCst);
                if started.command_name == "findAndModify" {
                    seen.find_and_modify.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
        Client::with_options(options).unwrap()
    });
    let backend = MongoBackend::from_client(client, config(COLLECTION)).unwrap();
    // A first call opens the connection (its handshake is no command event).
    SharedLockBackend::state_shared(&backend, &fresh_name("rw-warm")).unwrap();
    for role in [Role::Read, Role::Write] {
        let before = commands.all.load(Ordering::SeqCst);
        let key = fresh_name("rw-one-trip");
        granted(ask(&backend, role, &key, OwnerToken::random(), "n"));
        assert_eq!(
            commands.all.load(Ordering::SeqCst) - before,
            1,
            "{}: one command",
            role.as_str()
        );
    }
    assert_eq!(commands.find_and_modify.load(Ordering::SeqCst), 2);
    drop(backend);
    runtime.shutdown_background();
}

/// Starts the change stream and waits until it is up.
fn listening(backend: &MongoBackend) {
    assert!(backend.release_events().is_some());
    leader_testkit::wait_until(
        "the change stream to come up",
        Duration::from_secs(10),
        || backend.is_listening(),
    );
}

/// A release that frees a read/write hold (a reader's, a writer's) or withdraws a
/// writer's intent wakes that name's waiters on another node through the change stream.
#[test]
fn a_shared_release_by_another_node_wakes_that_names_waiters() {
    let Some(uri) = uri() else { return };
    let holder = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let waiter = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    listening(&waiter);
    let events = waiter.release_events().unwrap();
    let release = |lease: &Lease, role| {
        SharedLockBackend::release_shared(&holder, ReleaseRequest::new(lease, Duration::ZERO), role)
            .unwrap()
    };

    let key = fresh_name("rw-wake");
    let reader = granted(ask(&holder, Role::Read, &key, OwnerToken::random(), "r"));
    let writer = OwnerToken::random();
    assert!(matches!(
        ask(&holder, Role::Write, &key, writer, "w"),
        SharedOutcome::Queued(_)
    ));
    let woken = events.listen(key.as_str());
    assert_eq!(release(&reader, Role::Read), ReleaseOutcome::Released);
    assert!(
        woken.wait_timeout(Duration::from_secs(5)),
        "a reader's release wakes the waiters"
    );

    let w = granted(ask(&holder, Role::Write, &key, writer, "w"));
    let woken = events.listen(key.as_str());
    assert_eq!(release(&w, Role::Write), ReleaseOutcome::Released);
    assert!(
        woken.wait_timeout(Duration::from_secs(5)),
        "a writer's release wakes the waiters"
    );

    let key = fresh_name("rw-wake-intent");
    granted(ask(&holder, Role::Read, &key, OwnerToken::random(), "r"));
    let quitter = OwnerToken::random();
    assert!(matches!(
        ask(&holder, Role::Write, &key, quitter, "w"),
        SharedOutcome::Queued(_)
    ));
    let woken = events.listen(key.as_str());
    let now = std::time::SystemTime::now();
    let intent_only = Lease::new(key.clone(), quitter, "w", 0, now, now);
    assert_eq!(release(&intent_only, Role::Write), ReleaseOutcome::Released);
    assert!(
        woken.wait_timeout(Duration::from_secs(5)),
        "a withdrawn intent wakes the readers it held out"
    );
}

/// A reader's release with a minimum lease keeps its hold (marked released, counted among
/// the readers: a writer is queued behind it) until `acquired_at + min_lease_time` on the
/// server's clock; a release whose minimum lease has passed frees the hold at once and
/// wakes the waiters.
#[test]
fn a_readers_minimum_lease_keeps_its_hold_and_one_already_over_frees_it() {
    let Some(uri) = uri() else { return };
    let raw = Raw::connect(&uri);
    let holder = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let waiter = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    listening(&waiter);
    let key = fresh_name("rw-min-lease");
    let kept = granted(ask(&holder, Role::Read, &key, OwnerToken::random(), "kept"));
    let release = |lease: &Lease, min| {
        SharedLockBackend::release_shared(&holder, ReleaseRequest::new(lease, min), Role::Read)
            .unwrap()
    };
    assert_eq!(
        release(&kept, Duration::from_secs(30)),
        ReleaseOutcome::Released
    );
    let doc = raw.find(SHARED, key.as_str()).unwrap();
    let readers = doc.get_array("readers").unwrap();
    let Some(Bson::Document(reader)) = readers.first() else {
        panic!("{doc:?}")
    };
    assert!(reader.get_bool("released").unwrap(), "{doc:?}");
    assert!(matches!(
        ask(&holder, Role::Write, &key, OwnerToken::random(), "w"),
        SharedOutcome::Queued(s) if s.readers.len() == 1
    ));
    assert_eq!(
        release(&kept, Duration::ZERO),
        ReleaseOutcome::NotHeld,
        "released already"
    );

    let key = fresh_name("rw-min-lease-over");
    let short = Duration::from_millis(100);
    let over = granted(ask(&holder, Role::Read, &key, OwnerToken::random(), "r"));
    let end = over.acquired_at + short;
    leader_testkit::wait_until(
        "the server's clock to pass the minimum lease",
        Duration::from_secs(10),
        || raw.server_now() > end,
    );
    let woken = waiter.release_events().unwrap().listen(key.as_str());
    assert_eq!(release(&over, short), ReleaseOutcome::Released);
    assert!(
        woken.wait_timeout(Duration::from_secs(5)),
        "freed, so the waiters wake"
    );
    assert!(
        SharedLockBackend::state_shared(&holder, &key)
            .unwrap()
            .is_free()
    );
}
