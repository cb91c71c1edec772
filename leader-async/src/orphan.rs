//! Releasing acquisitions nobody knows about: an acquire that failed or was cancelled after
//! it was sent (see [`Orphan`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_core::{AcquireRequest, AsyncLockBackend, Orphan};

use crate::rt;

/// Releases `orphan` in the background, again and again while it could be live; the work
/// survives a runtime shutdown (see [`rt::spawn_to_completion`]).
pub(crate) fn release_orphan<B: AsyncLockBackend + 'static>(backend: Arc<B>, orphan: Orphan) {
    rt::spawn_to_completion(move || async move {
        let mut orphan = orphan;
        loop {
            let answer = backend.release(orphan.lease(), Duration::ZERO).await;
            match orphan.after_release(&answer) {
                Some(delay) => rt::sleep(delay).await,
                None => return,
            }
        }
    });
}

/// An acquire request on its way. Unless [`settled`](Self::settled) — answered — it is
/// released in the background when dropped: the caller stopped waiting (its future was
/// dropped) or the request failed, and the server may have applied it anyway.
pub(crate) struct InFlight<'a, B: AsyncLockBackend + 'static> {
    backend: &'a Arc<B>,
    request: AcquireRequest<'a>,
    sent_at: Instant,
    settled: bool,
}

impl<'a, B: AsyncLockBackend + 'static> InFlight<'a, B> {
    pub(crate) fn new(backend: &'a Arc<B>, request: AcquireRequest<'a>, sent_at: Instant) -> Self {
        InFlight {
            backend,
            request,
            sent_at,
            settled: false,
        }
    }

    /// The request was answered: nothing to clean up.
    pub(crate) fn settled(mut self) {
        self.settled = true;
    }
}

impl<B: AsyncLockBackend + 'static> Drop for InFlight<'_, B> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let request = &self.request;
        tracing::debug!(lock = %request.key, "an acquire was cancelled or failed after it was sent: releasing its owner token");
        let orphan = Orphan::new(
            request.key.clone(),
            request.owner,
            self.sent_at,
            request.lease_time,
        );
        release_orphan(Arc::clone(self.backend), orphan);
    }
}
