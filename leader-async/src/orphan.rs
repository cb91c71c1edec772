//! Releasing acquisitions nobody knows about: an acquire that failed or was cancelled after
//! it was sent (see [`Orphan`]).

use std::sync::Arc;
use std::time::Duration;

use leader_core::__private::Orphan;
use leader_core::AsyncLockBackend;

use crate::rt;

/// Releases `orphan` in the background, again and again while it could be live; the work
/// survives a runtime shutdown (see [`rt::spawn_to_completion`]).
pub(crate) fn release_orphan<B: AsyncLockBackend + 'static>(backend: Arc<B>, orphan: Orphan) {
    rt::spawn_to_completion(move || async move {
        let mut orphan = orphan;
        loop {
            let mut answers = Vec::with_capacity(orphan.leases().len());
            for lease in orphan.leases() {
                let answer = backend.release(lease, Duration::ZERO).await;
                let unreachable = Orphan::ends_round(&answer);
                answers.push(answer);
                if unreachable {
                    break;
                }
            }
            match orphan.after_releases(&answers) {
                Some(delay) => rt::sleep(delay).await,
                None => return,
            }
        }
    });
}
