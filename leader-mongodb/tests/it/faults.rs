//! Faults: a server that stops while a lease is held, a server that comes back, lock
//! and record documents of the wrong shape, and sixteen threads racing on a key with no document.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

use crate::common::{Raw, config, private_server, uri, uri_of};
use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, LeaderElectionOptions, Lease,
    LockBackend, LockName, OwnerToken, RecordWrite, ReleaseRequest, Renewal,
};
use leader_mongodb::{MongoBackend, MongoConfig};
use leader_rig::fixtures::Data;
use leader_testkit::{checks, fresh_name};
use mongodb::bson::{Bson, DateTime, Document, doc};

const LEASE: Duration = Duration::from_secs(30);

fn request<'a>(key: &'a LockName, owner: OwnerToken, node: &'a str) -> AcquireRequest<'a> {
    AcquireRequest::new(key, owner, node, LEASE)
}

fn must_acquire(backend: &MongoBackend, key: &LockName) -> Lease {
    match LockBackend::try_acquire(backend, request(key, OwnerToken::random(), "node-a")) {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key}: {other:?}"),
    }
}

/// A backend error on `key`, of the given kind.
fn assert_backend_error<T: std::fmt::Debug>(
    result: Result<T, Error>,
    key: &LockName,
    transient: bool,
) {
    checks::assert_backend_error(result, key.as_str(), transient, "mongodb");
}

/// Driver timeouts of one second and an operation bound of three.
fn fast(collection: &str) -> MongoConfig {
    config(collection)
        .with_server_selection_timeout(Duration::from_secs(1))
        .with_connect_timeout(Duration::from_secs(1))
        .with_operation_timeout(Duration::from_secs(3))
}

#[test]
fn stopped_server_fails_closed_within_the_timeout_and_the_action_does_not_run() {
    let Some(mut server) = private_server() else {
        return;
    };
    let config = fast("faults_stopped");
    let bound = config.operation_timeout() + Duration::from_secs(1);
    let backend = MongoBackend::connect_with(&uri_of(&server), config).unwrap();
    let key = fresh_name("stopped");
    let lease = must_acquire(&backend, &key);
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = LeaderElector::new(backend.clone(), options).unwrap();

    server.kill();

    checks::a_stopped_server_fails_closed_within_the_timeout(
        &backend, &lease, bound, false, "mongodb",
    );

    let ran = AtomicBool::new(false);
    checks::fails_fast("run_if_leader", key.as_str(), bound, "mongodb", || {
        elector.run_if_leader(key.as_str(), || ran.store(true, Ordering::SeqCst))
    });
    assert!(!ran.load(Ordering::SeqCst), "the action must not run");
}

#[test]
fn restarted_server_is_used_again_by_the_same_backend() {
    let Some(mut server) = private_server() else {
        return;
    };
    let config = fast("faults_restart");
    let backend = MongoBackend::connect_with(&uri_of(&server), config).unwrap();
    let before = fresh_name("restart");
    must_acquire(&backend, &before);

    server.kill();
    let key = fresh_name("restart");
    assert_backend_error(LockBackend::state(&backend, &key), &key, true);
    server.restart(Data::Keep).unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match LockBackend::state(&backend, &key) {
            Ok(_) => break,
            Err(err) => {
                assert!(err.is_transient(), "{err}");
                assert!(
                    Instant::now() < deadline,
                    "no recovery after restart: {err}"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    let lease = must_acquire(&backend, &key);
    assert!(LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).is_ok());
    let async_lease = smol::block_on(AsyncLockBackend::try_acquire(
        &backend,
        request(&key, OwnerToken::random(), "node-b"),
    ));
    assert!(
        matches!(async_lease, Ok(AcquireOutcome::Acquired(_))),
        "{async_lease:?}"
    );
}

/// Waits until `backend` answers again after a restart of its server.
fn wait_for_recovery(backend: &MongoBackend, key: &LockName) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Err(err) = LockBackend::state(backend, key) {
        assert!(err.is_transient(), "{err}");
        assert!(
            Instant::now() < deadline,
            "no recovery after restart: {err}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A `kill -9` right after acknowledged writes loses none of them: the backend writes with
/// a journaled write concern, and a lease the server acknowledged (an acquire, then an
/// extend) must still hold the lock after a crash. The chaos run once saw two holders
/// when the test server dropped an acknowledged extend on restart.
#[test]
fn acknowledged_acquires_and_extends_survive_a_kill_9() {
    let Some(mut server) = private_server() else {
        return;
    };
    let backend = MongoBackend::connect_with(&uri_of(&server), fast("faults_durable")).unwrap();
    let keys: Vec<LockName> = (0..5).map(|_| fresh_name("durable")).collect();
    let leases: Vec<Lease> = keys.iter().map(|key| must_acquire(&backend, key)).collect();
    let extended_to: Vec<SystemTime> = leases
        .iter()
        .map(
            |lease| match LockBackend::extend(&backend, Renewal::new(lease, 2 * LEASE)) {
                Ok(leader_core::ExtendOutcome::Extended { expires_at }) => expires_at,
                other => panic!("expected to extend {}: {other:?}", lease.key),
            },
        )
        .collect();

    server.restart(Data::Keep).unwrap();
    wait_for_recovery(&backend, &keys[0]);

    for ((key, lease), expires_at) in keys.iter().zip(&leases).zip(&extended_to) {
        let state = LockBackend::state(&backend, key).unwrap();
        let holder = state
            .leader()
            .unwrap_or_else(|| panic!("{key}: the acknowledged lease was lost: {state:?}"));
        assert_eq!(holder.fencing_token, lease.fencing_token, "{key}");
        assert_eq!(holder.expires_at, *expires_at, "{key}: the extend was lost");
        let rival =
            LockBackend::try_acquire(&backend, request(key, OwnerToken::random(), "node-b"));
        assert!(
            matches!(rival, Ok(AcquireOutcome::Held(_))),
            "{key}: {rival:?}"
        );
    }
}

fn corrupted_documents(id: &str) -> Vec<(&'static str, Document)> {
    let now = DateTime::from_system_time(SystemTime::now());
    let later = DateTime::from_millis(now.timestamp_millis() + 60_000);
    let good = doc! {
        "_id": id,
        "owner": "0123456789abcdef0123456789abcdef",
        "leader_id": "node-x",
        "fencing_token": 3_i64,
        "acquired_at": now,
        "expires_at": later,
    };
    let with = |field: &str, value: Bson| {
        let mut doc = good.clone();
        doc.insert(field, value);
        doc
    };
    let without = |field: &str| {
        let mut doc = good.clone();
        doc.remove(field);
        doc
    };
    vec![
        ("owner is a number", with("owner", Bson::Int32(42))),
        (
            "fencing_token is text",
            with("fencing_token", "three".into()),
        ),
        (
            "fencing_token is negative",
            with("fencing_token", Bson::Int64(-1)),
        ),
        (
            "fencing_token is a double",
            with("fencing_token", Bson::Double(3.0)),
        ),
        (
            "acquired_at is text",
            with("acquired_at", "yesterday".into()),
        ),
        ("expires_at is a number", with("expires_at", Bson::Int64(5))),
        ("leader_id is null", with("leader_id", Bson::Null)),
        ("expires_at is missing", without("expires_at")),
        ("fencing_token is missing", without("fencing_token")),
    ]
}

#[test]
fn a_lock_document_of_the_wrong_shape_is_a_permanent_error_and_stays_untouched() {
    let Some(uri) = uri() else { return };
    let collection = "faults_corrupted";
    let backend = MongoBackend::connect_with(&uri, config(collection)).unwrap();
    let raw = Raw::connect(&uri);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let key = fresh_name("corrupted");
    for (case, doc) in corrupted_documents(key.as_str()) {
        raw.replace(collection, doc.clone());
        let owner = OwnerToken::random();
        let blocking = LockBackend::try_acquire(&backend, request(&key, owner, "node-a"));
        assert!(blocking.is_err(), "{case}: {blocking:?}");
        assert_backend_error(blocking, &key, false);
        let on_tokio = tokio.block_on(AsyncLockBackend::try_acquire(
            &backend,
            request(&key, owner, "node-a"),
        ));
        assert_backend_error(on_tokio, &key, false);
        assert_backend_error(LockBackend::state(&backend, &key), &key, false);
        assert_backend_error(
            smol::block_on(AsyncLockBackend::state(&backend, &key)),
            &key,
            false,
        );
        assert_eq!(
            raw.find(collection, key.as_str()),
            Some(doc),
            "{case}: the document must stay as it was"
        );
    }
}

/// Record documents this backend never writes, each with the version a writer may
/// expect of it.
fn corrupted_records(id: &str) -> Vec<(&'static str, Document, Option<u64>)> {
    vec![
        (
            "version is text",
            doc! { "_id": id, "version": "one", "value": "v" },
            Some(1),
        ),
        (
            "version is zero",
            doc! { "_id": id, "version": 0_i64, "value": "v" },
            None,
        ),
        (
            "version is negative",
            doc! { "_id": id, "version": -1_i64, "value": "v" },
            Some(1),
        ),
        (
            "version is a double",
            doc! { "_id": id, "version": 1.0_f64, "value": "v" },
            Some(1),
        ),
        (
            "value is a number",
            doc! { "_id": id, "version": 1_i64, "value": 7_i32 },
            Some(1),
        ),
        (
            "value is missing",
            doc! { "_id": id, "version": 1_i64 },
            Some(1),
        ),
    ]
}

#[test]
fn a_record_document_of_the_wrong_shape_is_a_permanent_error_and_stays_untouched() {
    let Some(uri) = uri() else { return };
    let collection = "faults_corrupted_records";
    let backend = MongoBackend::connect_with(&uri, config(collection)).unwrap();
    let raw = Raw::connect(&uri);
    let records = format!("{collection}_records");
    let key = fresh_name("corrupted-record");
    for (case, doc, expected) in corrupted_records(key.as_str()) {
        raw.replace(&records, doc.clone());
        let write = RecordWrite::new(&key, expected, "new").unwrap();
        assert_backend_error(LockBackend::read_record(&backend, &key), &key, false);
        assert_backend_error(LockBackend::write_record(&backend, write), &key, false);
        assert_backend_error(
            smol::block_on(AsyncLockBackend::read_record(&backend, &key)),
            &key,
            false,
        );
        assert_backend_error(
            smol::block_on(AsyncLockBackend::write_record(&backend, write)),
            &key,
            false,
        );
        assert_eq!(
            raw.find(&records, key.as_str()),
            Some(doc),
            "{case}: the record must stay as it was"
        );
    }
}

#[test]
fn sixteen_threads_racing_on_a_key_without_a_document_have_exactly_one_winner() {
    let Some(uri) = uri() else { return };
    let collection = "faults_race";
    let backends: Vec<MongoBackend> = (0..16)
        .map(|_| MongoBackend::connect_with(&uri, config(collection)).unwrap())
        .collect();
    let raw = Raw::connect(&uri);
    for round in 0..50 {
        let key = Arc::new(fresh_name("race"));
        let barrier = Arc::new(Barrier::new(16));
        let threads: Vec<_> = backends
            .iter()
            .enumerate()
            .map(|(i, backend)| {
                let (backend, key, barrier) =
                    (backend.clone(), Arc::clone(&key), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let owner = OwnerToken::random();
                    let node = format!("node-{i}");
                    barrier.wait();
                    let outcome = LockBackend::try_acquire(&backend, request(&key, owner, &node));
                    (owner, outcome)
                })
            })
            .collect();
        let outcomes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let errors: Vec<_> = outcomes
            .iter()
            .filter_map(|(_, o)| o.as_ref().err())
            .collect();
        assert!(errors.is_empty(), "round {round}: {errors:?}");
        let winners: Vec<_> = outcomes
            .iter()
            .filter_map(|(owner, o)| match o {
                Ok(AcquireOutcome::Acquired(lease)) => Some((*owner, lease.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner");
        let (owner, lease) = &winners[0];
        let stored = raw.find(collection, key.as_str()).unwrap();
        assert_eq!(stored.get_str("owner").unwrap(), owner.to_string());
        let token = stored.get_i64("fencing_token").unwrap();
        assert_eq!(
            u64::try_from(token).unwrap(),
            lease.fencing_token,
            "round {round}"
        );
        for (_, outcome) in &outcomes {
            if let Ok(AcquireOutcome::Held(Some(holder))) = outcome {
                assert_eq!(holder.leader_id, lease.leader_id, "round {round}");
            }
        }
    }
}
