//! Release notifications: a change stream on the lock collection wakes the waiters of
//! other backends (other nodes) at once when a lock is released or force-released, with
//! the ended lease's fencing token, and comes back after a server restart.

use std::time::Duration;

use crate::common::{Raw, config, private_server, uri, uri_of};
use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, Lease, LockBackend, OwnerToken, ReleaseOutcome,
    ReleaseRequest,
};
use leader_mongodb::MongoBackend;
use leader_rig::fixtures::Data;
use leader_testkit::fresh_name;
use mongodb::bson::Bson;

const COLLECTION: &str = "notify_locks";

/// Starts the change stream and waits until it is up.
fn listening(backend: &MongoBackend) {
    assert!(backend.release_events().is_some());
    leader_testkit::wait_until(
        "the change stream to come up",
        Duration::from_secs(10),
        || backend.is_listening(),
    );
}

#[test]
fn a_release_by_another_node_wakes_only_that_locks_waiters() {
    let Some(uri) = uri() else { return };
    let holder = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let waiter = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    listening(&waiter);
    leader_testkit::checks::a_release_by_another_node_wakes_only_that_locks_waiters(
        &holder,
        &waiter,
        Duration::from_millis(500),
    );
}

#[test]
fn a_release_kept_for_its_minimum_lease_wakes_nobody() {
    let Some(uri) = uri() else { return };
    let holder = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let waiter = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    listening(&waiter);
    let key = fresh_name("kept");
    let request = AcquireRequest::new(
        &key,
        OwnerToken::random(),
        "holder",
        Duration::from_secs(30),
    );
    let AcquireOutcome::Acquired(lease) = LockBackend::try_acquire(&holder, request).unwrap()
    else {
        panic!("a fresh lock is free");
    };
    let woken = waiter.release_events().unwrap().listen(key.as_str());
    // Still held until its minimum lease ends: nobody can take it, so nobody is woken.
    LockBackend::release(
        &holder,
        ReleaseRequest::new(&lease, Duration::from_secs(20)),
    )
    .unwrap();
    assert!(!woken.wait_timeout(Duration::from_millis(500)));
}

/// Takes a fresh lock `key` for 30 s on `backend`.
fn hold(backend: &MongoBackend, key: &leader_core::LockName) -> Lease {
    let request = AcquireRequest::new(key, OwnerToken::random(), "holder", Duration::from_secs(30));
    match LockBackend::try_acquire(backend, request).unwrap() {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("a fresh lock is free: {other:?}"),
    }
}

/// Waits until the server's clock is past `lease`'s acquisition plus `min_lease_time`.
fn until_the_minimum_lease_has_passed(raw: &Raw, lease: &Lease, min_lease_time: Duration) {
    let end = lease.acquired_at + min_lease_time;
    leader_testkit::wait_until(
        "the server's clock to pass the minimum lease",
        Duration::from_secs(10),
        || raw.server_now() > end,
    );
}

/// A release whose minimum lease has already passed frees the lock (owner null, as a
/// plain release writes), so the change stream wakes the waiters with the ended lease's
/// token: they do not have to poll for it.
#[test]
fn a_release_after_its_minimum_lease_has_passed_frees_the_lock_and_wakes_the_waiters() {
    let Some(uri) = uri() else { return };
    let raw = Raw::connect(&uri);
    let holder = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let waiter = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    listening(&waiter);
    let min_lease_time = Duration::from_millis(100);
    let key = fresh_name("min-lease-passed");
    let lease = hold(&holder, &key);
    until_the_minimum_lease_has_passed(&raw, &lease, min_lease_time);

    let woken = waiter.release_events().unwrap().listen(key.as_str());
    let released =
        LockBackend::release(&holder, ReleaseRequest::new(&lease, min_lease_time)).unwrap();
    assert_eq!(released, ReleaseOutcome::Released);
    let doc = raw.find(COLLECTION, key.as_str()).unwrap();
    assert_eq!(doc.get("owner"), Some(&Bson::Null), "freed: {doc:?}");
    let notice = woken
        .wait_notice_timeout(Duration::from_secs(5))
        .expect("the change stream reports the release");
    assert_eq!(notice.fencing_token(), Some(lease.fencing_token));
}

/// The same through the batch release: every lease of the batch whose minimum lease has
/// passed is freed and announced.
#[test]
fn a_batch_release_after_the_minimum_lease_wakes_the_waiters_of_every_lock() {
    let Some(uri) = uri() else { return };
    let raw = Raw::connect(&uri);
    let holder = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let waiter = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    listening(&waiter);
    let min_lease_time = Duration::from_millis(100);
    let keys = [fresh_name("batch-a"), fresh_name("batch-b")];
    let leases: Vec<Lease> = keys.iter().map(|key| hold(&holder, key)).collect();
    until_the_minimum_lease_has_passed(&raw, &leases[1], min_lease_time);

    let events = waiter.release_events().unwrap();
    let woken: Vec<_> = keys.iter().map(|key| events.listen(key.as_str())).collect();
    let requests: Vec<_> = leases
        .iter()
        .map(|lease| ReleaseRequest::new(lease, min_lease_time))
        .collect();
    for answer in LockBackend::release_batch(&holder, &requests) {
        assert_eq!(answer.unwrap(), ReleaseOutcome::Released);
    }
    for ((listener, lease), key) in woken.into_iter().zip(&leases).zip(&keys) {
        let notice = listener
            .wait_notice_timeout(Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{key}: the change stream reports the release"));
        assert_eq!(notice.fencing_token(), Some(lease.fencing_token), "{key}");
    }
}

/// A force release of a lock kept for its minimum lease frees it and wakes its waiters.
#[test]
fn a_force_release_of_a_lock_kept_for_its_minimum_lease_wakes_the_waiters() {
    let Some(uri) = uri() else { return };
    let holder = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let waiter = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    listening(&waiter);
    let key = fresh_name("forced-kept");
    let lease = hold(&holder, &key);
    LockBackend::release(
        &holder,
        ReleaseRequest::new(&lease, Duration::from_secs(20)),
    )
    .unwrap();
    let woken = waiter.release_events().unwrap().listen(key.as_str());
    LockBackend::force_release(&holder, &key).unwrap();
    let notice = woken
        .wait_notice_timeout(Duration::from_secs(5))
        .expect("the change stream reports the force release");
    assert_eq!(notice.fencing_token(), Some(lease.fencing_token));
}

#[test]
fn notifications_can_be_turned_off() {
    let backend = MongoBackend::connect_with(
        "mongodb://127.0.0.1:1/",
        config(COLLECTION).with_release_notifications(false),
    )
    .unwrap();
    assert!(backend.release_events().is_none());
    assert!(!backend.is_listening());
}

#[test]
fn the_stream_comes_back_after_a_restart_and_wakes_every_waiter() {
    let Some(mut server) = private_server() else {
        return;
    };
    let uri = uri_of(&server);
    let backend = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    listening(&backend);
    let listener = backend.release_events().unwrap().listen("anything");

    server.kill();
    leader_testkit::wait_until(
        "the lost stream to be noticed",
        Duration::from_secs(20),
        || !backend.is_listening(),
    );
    server.restart(Data::Keep).unwrap();
    // Releases may have been missed while it was down: waiters are told to retry.
    assert!(listener.wait_timeout(Duration::from_secs(30)));
    // The read/write locks' stream comes back on its own backoff.
    leader_testkit::wait_until("both streams back", Duration::from_secs(30), || {
        backend.is_listening()
    });

    // And it delivers again.
    let other = MongoBackend::connect_with(&uri, config(COLLECTION)).unwrap();
    let key = fresh_name("after-restart");
    let request = AcquireRequest::new(
        &key,
        OwnerToken::random(),
        "holder",
        Duration::from_secs(30),
    );
    let AcquireOutcome::Acquired(lease) = LockBackend::try_acquire(&other, request).unwrap() else {
        panic!("a fresh lock is free");
    };
    let woken = backend.release_events().unwrap().listen(key.as_str());
    LockBackend::release(&other, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    let notice = woken
        .wait_notice_timeout(Duration::from_secs(5))
        .expect("woken after the restart");
    assert_eq!(notice.fencing_token(), Some(lease.fencing_token));
}
