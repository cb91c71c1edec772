//! Release notifications: a change stream on the lock collection wakes the waiters of
//! other backends (other nodes) at once when a lock is released or force-released, with
//! the ended lease's fencing token, and comes back after a server restart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{config, private_server, uri, uri_of};
use leader_core::{AcquireOutcome, AcquireRequest, Backend, LockBackend, OwnerToken};
use leader_mongodb::MongoBackend;
use leader_testkit::fixtures::Data;
use leader_testkit::fresh_name;

const COLLECTION: &str = "notify_locks";

/// Starts the change stream and waits until it is up.
fn listening(backend: &MongoBackend) {
    assert!(backend.release_events().is_some());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !backend.is_listening() {
        assert!(
            Instant::now() < deadline,
            "the change stream did not come up"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
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
    LockBackend::release(&holder, &lease, Duration::from_secs(20)).unwrap();
    assert!(!woken.wait_timeout(Duration::from_millis(500)));
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
    let deadline = Instant::now() + Duration::from_secs(20);
    while backend.is_listening() {
        assert!(Instant::now() < deadline, "the lost stream went unnoticed");
        std::thread::sleep(Duration::from_millis(5));
    }
    server.restart(Data::Keep).unwrap();
    // Releases may have been missed while it was down: waiters are told to retry.
    assert!(listener.wait_timeout(Duration::from_secs(30)));
    assert!(backend.is_listening());

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
    LockBackend::release(&other, &lease, Duration::ZERO).unwrap();
    let notice = woken
        .wait_notice_timeout(Duration::from_secs(5))
        .expect("woken after the restart");
    assert_eq!(notice.fencing_token(), Some(lease.fencing_token));
}
