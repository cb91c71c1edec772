//! Release notifications: one shared subscription per backend wakes waiters at a release,
//! on a single server and on a cluster, and wakes everyone after a reconnect.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::RedisHarness;
use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, LeaderElectionOptions, Lease, LockBackend, LockName,
    OwnerToken,
};
use leader_redis::{RedisBackend, RedisConfig};
use leader_testkit::fixtures::Data;
use leader_testkit::fresh_name;

fn acquire(backend: &RedisBackend, key: &LockName, lease_time: Duration) -> Lease {
    let request = AcquireRequest::new(key, OwnerToken::random(), "holder", lease_time);
    match LockBackend::try_acquire(backend, request).unwrap() {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("expected to acquire, got {other:?}"),
    }
}

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
fn an_elector_takes_over_right_after_the_release() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    // The median of five handoffs. A notified waiter takes about a millisecond, so one
    // slow wake-up on a loaded machine does not decide it; a waiter that only polled
    // (sleeping 64-250 ms between attempts by then) comes in under 20 ms about one time in
    // eight, so three times out of five about once in sixty runs.
    let mut handoffs: Vec<Duration> = (0..5).map(|_| one_handoff(&harness)).collect();
    handoffs.sort();
    assert!(
        handoffs[2] < Duration::from_millis(20),
        "took over {:?} after the release (median of {handoffs:?})",
        handoffs[2]
    );
}

/// Node A holds a lock; B waits in `run_if_leader`; A releases once B's backoff has grown.
/// Returns the time from the release to B's action.
fn one_handoff(harness: &RedisHarness) -> Duration {
    let holder = harness.make();
    let waiter = harness.make();
    common::subscribed(&waiter);
    let key = fresh_name("handoff");
    let lease = acquire(&holder, &key, Duration::from_secs(30));

    let options = LeaderElectionOptions::default().with_wait_time(Duration::from_secs(10));
    let elector = leader_blocking::LeaderElector::new(waiter, options).unwrap();
    let releaser = std::thread::spawn(move || {
        // Long enough for the waiter's backoff to reach delays of 64 ms and more.
        std::thread::sleep(Duration::from_millis(400));
        let released_at = Instant::now();
        LockBackend::release(&holder, &lease, Duration::ZERO).unwrap();
        released_at
    });
    let ran_at = elector
        .run_if_leader(key.as_str(), Instant::now)
        .unwrap()
        .expect("the waiter takes over");
    let released_at = releaser.join().unwrap();
    ran_at.saturating_duration_since(released_at)
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
