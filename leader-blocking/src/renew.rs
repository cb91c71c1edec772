//! Renewals raced against the lease's deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use leader_core::__private::{Keepalive, LeaseTracker, Raced};
use leader_core::{Error, ExtendOutcome, LockBackend};

/// How often a caller waiting for an answer checks whether it was asked to stop.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// What became of a renewal raced against its deadline.
pub(crate) type Renewal = Raced<Result<ExtendOutcome, Error>>;

/// Calls `extend` for `tracker`'s lease (inside its `leader.extend` span) and waits for
/// its answer until `deadline`, or until `stop_requested`.
pub(crate) fn extend_before<B: LockBackend + 'static>(
    backend: &Arc<B>,
    tracker: &Arc<LeaseTracker>,
    keepalive: Keepalive,
    deadline: Instant,
    stop_requested: impl Fn() -> bool,
) -> Renewal {
    let renewing = Arc::clone(backend);
    let tracker = Arc::clone(tracker);
    let renewal = race_deadline(deadline, stop_requested, move || {
        tracker.traced_extend(|| renewing.extend(keepalive.renewal(tracker.lease())))
    });
    match renewal {
        Some(raced) => raced,
        None => Raced::Answered(Err(Error::ShutDown)),
    }
}

/// Runs `call` on a short-lived thread and waits for it until `deadline`, or until
/// `stop_requested`; a late answer is dropped. `None` when no thread could be started or
/// the call panicked.
pub(crate) fn race_deadline<T: Send + 'static>(
    deadline: Instant,
    stop_requested: impl Fn() -> bool,
    call: impl FnOnce() -> T + Send + 'static,
) -> Option<Raced<T>> {
    let (answer, answered) = crossbeam_channel::bounded(1);
    let spawned = std::thread::Builder::new()
        .name("leader-renew".into())
        .spawn(move || {
            // The receiver is gone when the caller stopped waiting: the answer is too late.
            let _ = answer.send(call());
        });
    if let Err(err) = spawned {
        tracing::warn!(error = %err, "could not start a renewal thread");
        return None;
    }
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match answered.recv_timeout(left.min(STOP_CHECK)) {
            Ok(answer) => return Some(Raced::Answered(answer)),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) if left <= STOP_CHECK => {
                return Some(Raced::DeadlinePassed);
            }
            Err(RecvTimeoutError::Timeout) if stop_requested() => return Some(Raced::Stopped),
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}
