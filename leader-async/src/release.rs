//! Releases that reach the server even when the future awaiting them is dropped.

use std::sync::Arc;
use std::time::Duration;

use leader_core::__private::{LeaseTracker, Orphan};
use leader_core::{AsyncLockBackend, Error, ReleaseOutcome, ReleaseRequest};

use crate::on_drop::OnDrop;
use crate::orphan::{after_release, release_orphan};
use crate::rt;

/// Releases `term`'s lease (keeping the lock until `acquired_at + min_lease_time`). If this
/// future is dropped before the answer (a cancelled caller, a runtime shutting down), the
/// release is finished in the background instead (see [`rt::spawn_to_completion`]); one
/// that fails transiently goes on in the background as an orphan's release does.
pub(crate) async fn release<B: AsyncLockBackend + 'static>(
    backend: &Arc<B>,
    term: &Arc<LeaseTracker>,
    min_lease_time: Duration,
) -> Result<ReleaseOutcome, Error> {
    let unfinished = OnDrop::new(|| release_in_background(backend, term, min_lease_time));
    let answer = term
        .traced_release_async(backend.release(ReleaseRequest::new(term.lease(), min_lease_time)))
        .await;
    unfinished.disarm();
    after_release(backend, term, min_lease_time, answer)
}

/// Releases `term`'s lease in the background, finishing even if the runtime shuts down.
pub(crate) fn release_in_background<B: AsyncLockBackend + 'static>(
    backend: &Arc<B>,
    term: &Arc<LeaseTracker>,
    min_lease_time: Duration,
) {
    release_in_background_then(backend, term, min_lease_time, None);
}

/// [`release_in_background`], then `late` (what an unsettled attempt of the lease's owner
/// token may still take) released as an orphan: in that order, since the term's own lease
/// has that token too, and an orphan release that freed it would end there, before the
/// attempt it is for could land.
pub(crate) fn release_in_background_then<B: AsyncLockBackend + 'static>(
    backend: &Arc<B>,
    term: &Arc<LeaseTracker>,
    min_lease_time: Duration,
    late: Option<Orphan>,
) {
    let backend = Arc::clone(backend);
    let term = Arc::clone(term);
    rt::spawn_to_completion(move || async move {
        let released = term.traced_release_async(
            backend.release(ReleaseRequest::new(term.lease(), min_lease_time)),
        );
        let answer = after_release(&backend, &term, min_lease_time, released.await);
        if let Err(err) = answer {
            tracing::warn!(lock = %term.lease().key, error = %err, "background release failed");
        }
        if let Some(late) = late {
            release_orphan(backend, late);
        }
    });
}
