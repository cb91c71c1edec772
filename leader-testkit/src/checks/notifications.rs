//! Release notifications between nodes: a release by one backend wakes the waiters of
//! another (PostgreSQL's `NOTIFY`, Redis' pub/sub, etcd's watch), and only the released
//! lock's; the notification names the lock and the fencing token of the lease that ended.

use std::time::{Duration, Instant};

use leader_core::{
    AcquireOutcome, AcquireRequest, ForceReleaseOutcome, LockBackend, OwnerToken, ReleaseRequest,
};

use crate::harness::fresh_name;

/// `holder` (one node) takes a fresh lock and releases it; the waiter listening on
/// `waiter`'s release events (another node, on the same store, its events already up),
/// which then tried the lock and found it held as every waiter does, is woken within
/// `latency` of the release, with a notice naming the lock and the lease's fencing token,
/// and a waiter on another lock is not. Then the same for a force release by `holder` of
/// the lock taken again, which wakes a listener that has not tried: the notice names the
/// forced holder's token.
///
/// A waiter listens, then tries (the order that misses no release), so a backend may
/// announce only the releases of leases a listening node has tried: the try is how its
/// store learns that someone waits.
///
/// # Panics
///
/// When `waiter` has no release events, the waiter is not woken within `latency` or is
/// told another key or token, the other one is woken, or a call fails.
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
    let attempt = AcquireRequest::new(
        &key,
        OwnerToken::random(),
        "waiter",
        Duration::from_secs(30),
    );
    match LockBackend::try_acquire(waiter, attempt) {
        Ok(AcquireOutcome::Held(_)) => {}
        other => panic!("expected {key} held by the holder: {other:?}"),
    }
    let released_at = Instant::now();
    LockBackend::release(holder, ReleaseRequest::new(&lease, Duration::ZERO)).expect("release");
    let notice = listener
        .wait_notice_timeout(Duration::from_secs(2))
        .expect("the waiter was not woken");
    let woken_after = released_at.elapsed();
    assert!(woken_after < latency, "woken after {woken_after:?}");
    assert_eq!(
        (notice.key(), notice.fencing_token()),
        (Some(key.as_str()), Some(lease.fencing_token)),
        "the notice names the lock and the lease that ended"
    );
    assert!(
        !other.wait_timeout(Duration::from_millis(50)),
        "only the released lock's waiters wake"
    );

    let request = AcquireRequest::new(
        &key,
        OwnerToken::random(),
        "holder",
        Duration::from_secs(30),
    );
    let again = match LockBackend::try_acquire(holder, request) {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key} again: {other:?}"),
    };
    let listener = events.listen(key.as_str());
    match LockBackend::force_release(holder, &key) {
        Ok(ForceReleaseOutcome::Released(_)) => {}
        other => panic!("expected to force-release {key}: {other:?}"),
    }
    let notice = listener
        .wait_notice_timeout(Duration::from_secs(2))
        .expect("a force release wakes the waiter");
    assert_eq!(
        (notice.key(), notice.fencing_token()),
        (Some(key.as_str()), Some(again.fencing_token)),
        "a force release's notice names the holder it freed"
    );
}
