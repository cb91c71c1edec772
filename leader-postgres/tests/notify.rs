//! Release notifications: `NOTIFY` on release wakes waiters of other backends (other
//! nodes) at once, and the `LISTEN` session comes back after a server restart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{config, must_acquire, private_server, url};
use leader_core::{Backend, LeaderElectionOptions, LockBackend};
use leader_postgres::PostgresBackend;
use leader_testkit::fixtures::Data;
use leader_testkit::fresh_name;

const TABLE: &str = "notify_locks";

/// Starts the `LISTEN` session and waits until it is up.
fn listening(backend: &PostgresBackend) {
    assert!(backend.release_events().is_some());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !backend.is_listening() {
        assert!(Instant::now() < deadline, "LISTEN did not come up");
        std::thread::sleep(Duration::from_millis(5));
    }
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

/// Node A holds a lock; B (another backend) waits in `run_if_leader`; A releases once B's
/// backoff has grown. The time from the release to B's action.
fn one_handoff(url: &str, notifications: bool) -> Duration {
    let holder = PostgresBackend::connect_with(url, config(TABLE)).unwrap();
    let waiter =
        PostgresBackend::connect_with(url, config(TABLE).with_release_notifications(notifications))
            .unwrap();
    if notifications {
        listening(&waiter);
    }
    let key = fresh_name("handoff");
    let lease = must_acquire(&holder, &key, "holder", Duration::from_secs(30));
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

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The median of five handoffs with notifications, and of five that only poll: a
/// notified waiter takes about a millisecond, a polling one sleeps up to 250 ms between
/// attempts by then. Only the ordering and a generous bound are asserted (a loaded
/// machine delays both); the figures are printed.
#[test]
fn a_waiting_node_takes_over_right_after_the_release() {
    let Some(url) = url() else { return };
    let notified = median((0..5).map(|_| one_handoff(&url, true)).collect());
    let polled = median((0..5).map(|_| one_handoff(&url, false)).collect());
    eprintln!("handoff median: with NOTIFY {notified:?}, polling only {polled:?}");
    assert!(
        notified < Duration::from_millis(50),
        "took over {notified:?} after the release"
    );
    assert!(
        notified < polled,
        "NOTIFY ({notified:?}) must beat polling ({polled:?})"
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
    let deadline = Instant::now() + Duration::from_secs(10);
    while backend.is_listening() {
        assert!(Instant::now() < deadline, "the lost session went unnoticed");
        std::thread::sleep(Duration::from_millis(5));
    }
    server.restart(Data::Keep).unwrap();
    // Releases may have been missed while it was down: waiters are told to retry.
    assert!(listener.wait_timeout(Duration::from_secs(15)));
    assert!(backend.is_listening());

    // And it delivers again.
    let other = PostgresBackend::connect_with(&server.url(), config(TABLE)).unwrap();
    let key = fresh_name("after-restart");
    let lease = must_acquire(&other, &key, "holder", Duration::from_secs(30));
    let woken = backend.release_events().unwrap().listen(key.as_str());
    LockBackend::release(&other, &lease, Duration::ZERO).unwrap();
    assert!(woken.wait_timeout(Duration::from_secs(2)));
}
