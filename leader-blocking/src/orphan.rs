//! Releasing acquisitions nobody knows about: an acquire that failed after it was sent
//! (see [`Orphan`]).

use std::sync::Arc;
use std::time::Duration;

use leader_core::{LockBackend, Orphan};

/// Releases `orphan` on a thread of its own, again and again while it could be live.
pub(crate) fn release_orphan<B: LockBackend + 'static>(backend: Arc<B>, orphan: Orphan) {
    let key = orphan.lease().key.clone();
    let spawned = std::thread::Builder::new()
        .name("leader-orphan".into())
        .spawn(move || {
            let mut orphan = orphan;
            loop {
                let answer = backend.release(orphan.lease(), Duration::ZERO);
                match orphan.after_release(&answer) {
                    Some(delay) => std::thread::sleep(delay),
                    None => return,
                }
            }
        });
    if let Err(err) = spawned {
        tracing::warn!(lock = %key, error = %err, "could not start a thread to release a possibly orphaned lease; it runs out with its lease");
    }
}
