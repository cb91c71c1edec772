//! Release notifications through etcd's watch: a release, a force release and an expiry
//! (etcd deleting the keys of a lease that ran out) wake the waiters of other backends
//! (other nodes) at once. How soon a waiting elector takes over is timed, beside the other
//! backends', by the facade's `leader/tests/handoff.rs`; the watch coming back after a
//! server restart is in `faults.rs`.

use std::time::{Duration, Instant};

use crate::common::{EXPIRY_SLACK, config, must_acquire};
use leader_core::{Backend, LockBackend};
use leader_etcd::EtcdBackend;
use leader_rig::fixtures;
use leader_testkit::fresh_name;

const PREFIX: &str = "notify";

fn url() -> Option<String> {
    fixtures::shared_etcd().map(|server| server.url())
}

/// Starts the watch and waits until it is up.
fn listening(backend: &EtcdBackend) {
    assert!(backend.release_events().is_some());
    leader_testkit::wait_until("the watch to come up", Duration::from_secs(10), || {
        backend.is_listening()
    });
}

#[test]
fn a_release_by_another_node_wakes_only_that_locks_waiters() {
    let Some(url) = url() else { return };
    let holder = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    let waiter = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    listening(&waiter);
    leader_testkit::checks::a_release_by_another_node_wakes_only_that_locks_waiters(
        &holder,
        &waiter,
        Duration::from_millis(500),
    );
}

#[test]
fn a_force_release_by_an_operator_wakes_the_waiters() {
    let Some(url) = url() else { return };
    let holder = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    let operator = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    let waiter = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    listening(&waiter);
    let key = fresh_name("forced");
    must_acquire(&holder, &key, "stuck", Duration::from_secs(60));
    let woken = waiter.release_events().unwrap().listen(key.as_str());
    LockBackend::force_release(&operator, &key).unwrap();
    assert!(woken.wait_timeout(Duration::from_secs(2)));
}

#[test]
fn an_expired_lease_wakes_the_waiters_when_etcd_removes_it() {
    let Some(url) = url() else { return };
    let holder = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    let waiter = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    listening(&waiter);
    let key = fresh_name("expired");
    let lease_time = Duration::from_secs(1);
    let lease = must_acquire(&holder, &key, "crashed", lease_time);
    // The holder never renews nor releases (as a crashed node would not).
    let woken = waiter.release_events().unwrap().listen(key.as_str());
    let other = fresh_name("expired-other");
    let unrelated = waiter.release_events().unwrap().listen(other.as_str());
    let started = Instant::now();
    assert!(
        woken.wait_timeout(lease_time + EXPIRY_SLACK + Duration::from_secs(2)),
        "no wake-up when the lease ran out"
    );
    let after = started.elapsed();
    assert!(
        after >= lease_time - Duration::from_millis(100),
        "woken after {after:?}, before the lease of {lease_time:?} was over"
    );
    assert!(!unrelated.wait_timeout(Duration::from_millis(50)));
    // And the lock is free: the wake-up was its expiry.
    let next = must_acquire(&waiter, &key, "next", Duration::from_secs(5));
    assert!(next.fencing_token > lease.fencing_token);
}

#[test]
fn notifications_can_be_turned_off() {
    let backend = EtcdBackend::connect_with(
        "etcd://127.0.0.1:1",
        config(PREFIX).with_release_notifications(false),
    )
    .unwrap();
    assert!(backend.release_events().is_none());
    assert!(!backend.is_listening());
}
