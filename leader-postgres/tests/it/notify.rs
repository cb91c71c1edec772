//! Release notifications: `NOTIFY` on release wakes waiters of other backends (other
//! nodes) at once, and the `LISTEN` session comes back after a server restart. How soon a
//! waiting elector takes over after a release is timed, beside Redis's, by the facade's
//! `leader/tests/handoff.rs`.

use std::time::Duration;

use crate::common::{config, must_acquire, private_server, url};
use leader_core::{Backend, LockBackend, ReleaseRequest};
use leader_postgres::PostgresBackend;
use leader_rig::fixtures::Data;
use leader_testkit::fresh_name;

const TABLE: &str = "notify_locks";

/// Starts the `LISTEN` session and waits until it is up.
fn listening(backend: &PostgresBackend) {
    assert!(backend.release_events().is_some());
    leader_testkit::wait_until("LISTEN to come up", Duration::from_secs(10), || {
        backend.is_listening()
    });
}

#[test]
fn a_release_by_another_node_wakes_only_that_locks_waiters() {
    let Some(url) = url() else { return };
    let holder = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    let waiter = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    listening(&waiter);
    leader_testkit::checks::a_release_by_another_node_wakes_only_that_locks_waiters(
        &holder,
        &waiter,
        Duration::from_millis(500),
    );
}

#[test]
fn notifications_can_be_turned_off() {
    let backend = PostgresBackend::connect_with(
        "postgres://nobody@127.0.0.1:1/none",
        config(TABLE).with_release_notifications(false),
    )
    .unwrap();
    assert!(backend.release_events().is_none());
    assert!(!backend.is_listening());
}

#[test]
fn listen_comes_back_after_a_restart_and_wakes_every_waiter() {
    let Some(mut server) = private_server() else {
        return;
    };
    let backend = PostgresBackend::connect_with(&server.url(), config(TABLE)).unwrap();
    listening(&backend);
    let listener = backend.release_events().unwrap().listen("anything");

    server.kill();
    leader_testkit::wait_until(
        "the lost session to be noticed",
        Duration::from_secs(10),
        || !backend.is_listening(),
    );
    server.restart(Data::Keep).unwrap();
    // Releases may have been missed while it was down: waiters are told to retry.
    assert!(listener.wait_timeout(Duration::from_secs(15)));
    assert!(backend.is_listening());

    // And it delivers again.
    let other = PostgresBackend::connect_with(&server.url(), config(TABLE)).unwrap();
    let key = fresh_name("after-restart");
    let lease = must_acquire(&other, &key, "holder", Duration::from_secs(30));
    let woken = backend.release_events().unwrap().listen(key.as_str());
    LockBackend::release(&other, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    assert!(woken.wait_timeout(Duration::from_secs(2)));
}
