//! Release notifications: one shared subscription per backend wakes waiters at a release,
//! on a single server and on a cluster, and wakes everyone after a reconnect. How soon a
//! waiting elector takes over after a release is timed, beside PostgreSQL's, by the
//! facade's `leader/tests/handoff.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::RedisHarness;
use leader_core::Backend;
use leader_redis::{RedisBackend, RedisConfig};
use leader_testkit::fixtures::Data;

fn a_release_wakes_the_waiter(harness: RedisHarness) {
    let holder = harness.make();
    let waiter = harness.make();
    common::subscribed(&waiter);
    leader_testkit::checks::a_release_by_another_node_wakes_only_that_locks_waiters(
        &holder,
        &waiter,
        Duration::from_millis(200),
    );
}

#[test]
fn a_release_wakes_the_waiter_at_once() {
    if let Some(harness) = RedisHarness::standalone() {
        a_release_wakes_the_waiter(harness);
    }
}

#[test]
fn a_release_on_any_cluster_node_wakes_the_waiter() {
    if let Some(harness) = RedisHarness::cluster() {
        a_release_wakes_the_waiter(harness);
    }
}

#[test]
fn notifications_can_be_turned_off() {
    let backend = RedisBackend::connect_with(
        "redis://127.0.0.1/",
        RedisConfig::default().with_release_notifications(false),
    )
    .unwrap();
    assert!(backend.release_events().is_none());
    assert!(!backend.is_subscribed());
}

#[test]
fn a_resubscription_wakes_every_waiter() {
    let Some(mut server) = common::private_server() else {
        return;
    };
    let backend = RedisBackend::connect_with(
        &server.url(),
        RedisConfig::default()
            .with_connect_timeout(Duration::from_millis(300))
            .with_response_timeout(Duration::from_millis(300)),
    )
    .unwrap();
    common::subscribed(&backend);
    let listener = backend.release_events().unwrap().listen("anything");

    server.kill();
    let deadline = Instant::now() + Duration::from_secs(5);
    while backend.is_subscribed() {
        assert!(
            Instant::now() < deadline,
            "the lost subscription went unnoticed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    server.restart(Data::Keep).unwrap();
    // Releases may have been missed while it was down: waiters are told to retry.
    assert!(listener.wait_timeout(Duration::from_secs(10)));
    assert!(backend.is_subscribed());
}
