//! Release notifications: one shared subscription per backend wakes waiters at a release,
//! on a single server and on a cluster, and wakes everyone after a reconnect. How soon a
//! waiting elector takes over after a release is timed, beside PostgreSQL's, by the
//! facade's `leader/tests/handoff.rs`.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::RedisHarness;
use leader_core::{Backend, ReleaseRequest};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures::Data;

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

/// The next message on `subscriber` that names one of `keys` (other tests share the
/// channel), as `(key, token)`.
fn next_of(subscriber: &mut redis::PubSub<'_>, keys: &[&str]) -> (String, u64) {
    loop {
        let message = subscriber.get_message().expect("a release message in time");
        let payload: String = message.get_payload().unwrap();
        let notice = leader_core::ReleaseNotice::from_message(&payload);
        if let (Some(key), Some(token)) = (notice.key(), notice.fencing_token())
            && keys.contains(&key)
        {
            return (key.to_owned(), token);
        }
    }
}

/// A release is announced only when a listening node tried the lease (or read it, as an
/// observer does): a release nobody waits for costs the server no `PUBLISH`, and the
/// subscribers no message.
#[test]
fn only_a_release_someone_waits_for_is_published() {
    use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, OwnerToken};
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let holder = harness.make();
    let waiter = harness.make();
    common::subscribed(&waiter);
    let mut raw = harness.raw();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut subscriber = raw.as_pubsub();
    subscriber.subscribe("leader:released").unwrap();

    let take = |key: &leader_core::LockName| match LockBackend::try_acquire(
        &holder,
        AcquireRequest::new(key, OwnerToken::random(), "holder", Duration::from_secs(30)),
    )
    .unwrap()
    {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("expected to acquire {key}: {other:?}"),
    };
    let [unwatched, tried, observed] =
        ["unwatched", "tried", "observed"].map(leader_testkit::fresh_name);
    let keys = [unwatched.as_str(), tried.as_str(), observed.as_str()];
    let events = waiter.release_events().unwrap();

    // Nobody waits: released without a message.
    let lease = take(&unwatched);
    LockBackend::release(&holder, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();

    // A waiter listens, tries and finds it held: its release is announced.
    let lease = take(&tried);
    let listener = events.listen(tried.as_str());
    let attempt = AcquireRequest::new(&tried, OwnerToken::random(), "w", Duration::from_secs(30));
    assert!(matches!(
        LockBackend::try_acquire(&waiter, attempt).unwrap(),
        AcquireOutcome::Held(_)
    ));
    LockBackend::release(&holder, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    // The first message of ours names `tried`: the unwatched release before it sent none.
    assert_eq!(
        next_of(&mut subscriber, &keys),
        (tried.to_string(), lease.fencing_token)
    );
    assert!(listener.wait_timeout(Duration::from_secs(5)));

    // An observer listens and reads: its release is announced too.
    let lease = take(&observed);
    let listener = events.listen(observed.as_str());
    assert!(
        LockBackend::state(&waiter, &observed)
            .unwrap()
            .leader()
            .is_some()
    );
    LockBackend::release(&holder, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    assert_eq!(
        next_of(&mut subscriber, &keys),
        (observed.to_string(), lease.fencing_token)
    );
    assert!(listener.wait_timeout(Duration::from_secs(5)));
}
