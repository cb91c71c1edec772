//! Releasing acquisitions nobody knows about: an acquire that failed or was cancelled after
//! it was sent, and a held lease whose own release failed (see [`Orphan`]).
//!
//! Each orphan is a task of its own, so a backend whose releases hang delays no other
//! orphan; a task the runtime drops while shutting down finishes on a thread of its own
//! (see [`rt::spawn_to_completion`]), again one per orphan.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use leader_core::__private::{LeaseTracker, Orphan};
use leader_core::{AsyncLockBackend, Error, ReleaseOutcome, ReleaseRequest};

use crate::rt;

/// Orphans beyond this many at once are not released (with a warning): they run out with
/// their leases, and the process must not fill up with retrying tasks while a store is
/// down (a tenant poller leaves one per tenant a cycle).
const MAX_PENDING: usize = 10_000;

/// How many orphans are being released.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// One orphan counted in [`PENDING`] until the last of its runs ends.
#[derive(Debug)]
struct Counted;

impl Counted {
    fn enter() -> Option<Arc<Counted>> {
        let entered = PENDING.fetch_add(1, Ordering::AcqRel) < MAX_PENDING;
        let counted = Arc::new(Counted);
        entered.then_some(counted)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        PENDING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Hands the lease of `tracker`, whose release (keeping `min_lease_time`) answered
/// `answer`, to the background releases when that answer was a transient error (see
/// [`Orphan::after_release`]); gives the answer back.
pub(crate) fn after_release<B: AsyncLockBackend + 'static>(
    backend: &Arc<B>,
    tracker: &LeaseTracker,
    min_lease_time: Duration,
    answer: Result<ReleaseOutcome, Error>,
) -> Result<ReleaseOutcome, Error> {
    let lease_time = tracker.lease_time();
    if let Some(orphan) = Orphan::after_release(
        tracker.lease(),
        lease_time,
        min_lease_time,
        &answer,
        Instant::now(),
    ) {
        release_orphan(Arc::clone(backend), orphan);
    }
    answer
}

/// Releases `orphan` in the background, again and again while it could be live; the work
/// survives a runtime shutdown (see [`rt::spawn_to_completion`]).
pub(crate) fn release_orphan<B: AsyncLockBackend + 'static>(backend: Arc<B>, orphan: Orphan) {
    let Some(counted) = Counted::enter() else {
        let key = orphan.leases().first().map(|lease| lease.key.clone());
        tracing::warn!(lock = ?key, "too many possibly orphaned leases to release; this one runs out with its lease");
        return;
    };
    rt::spawn_to_completion(move || async move {
        let _counted = counted;
        let mut orphan = orphan;
        loop {
            let mut answers = Vec::with_capacity(orphan.leases().len());
            for lease in orphan.leases() {
                let answer = backend
                    .release(ReleaseRequest::new(lease, orphan.min_lease_time()))
                    .await;
                let unreachable = Orphan::ends_round(&answer);
                answers.push(answer);
                if unreachable {
                    break;
                }
            }
            match orphan.after_releases(&answers, Instant::now()) {
                Some(delay) => rt::sleep(delay).await,
                None => return,
            }
        }
    });
}
