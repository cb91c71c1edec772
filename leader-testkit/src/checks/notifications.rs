//! Release notifications between nodes: a release by one backend wakes the waiters of
//! another (PostgreSQL's `NOTIFY`, Redis' pub/sub), and only the released lock's.

use std::time::{Duration, Instant};

use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, OwnerToken};

use crate::harness::fresh_name;

/// `holder` (one node) takes a fresh lock and releases it; the waiter listening on
/// `waiter`'s release events (another node, on the same store, its events already up) is
/// woken within `latency` of the release, and a waiter on another lock is not.
///
/// # Panics
///
/// When `waiter` has no release events, the waiter is not woken within `latency`, the
/// other one is, or a call fails.
pub fn a_release_by_another_node_wakes_only_that_locks_waiters<B: LockBackend>(
    holder: &B,
    waiter: &B,
    latency: Duration,
) {
    let key = fresh_name("wake");
    let request = AcquireRequest::new(
        &key,
        OwnerToken::random(),
        "holder",
        Duration::from_secs(30),
    );
    let lease = match LockBackend::try_acquire(holder, request) {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key}: {other:?}"),
    };

    let events = waiter
        .release_events()
        .expect("the waiter's backend has release events");
    let other = events.listen("some-other-lock");
    let listener = events.listen(key.as_str());
    let released_at = Instant::now();
    LockBackend::release(holder, &lease, Duration::ZERO).expect("release");
    assert!(
        listener.wait_timeout(Duration::from_secs(2)),
        "the waiter was not woken"
    );
    let woken_after = released_at.elapsed();
    assert!(woken_after < latency, "woken after {woken_after:?}");
    assert!(
        !other.wait_timeout(Duration::from_millis(50)),
        "only the released lock's waiters wake"
    );
}
