//! Renewals raced against the lease's deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use leader_core::__private::LeaseTracker;
use leader_core::{Error, ExtendOutcome, LockBackend};

/// How often a caller waiting for a renewal's answer checks whether it was asked to stop.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// What became of a renewal raced against its deadline.
#[derive(Debug)]
pub(crate) enum Renewal {
    /// The backend answered in time.
    Answered(Result<ExtendOutcome, Error>),
    /// The deadline passed first: the lease is lost at that moment (DESIGN §4.7), whatever
    /// the driver's own timeout.
    DeadlinePassed,
    /// The caller was asked to stop while waiting.
    Stopped,
}

/// Calls `extend` for `tracker`'s lease (inside its `leader.extend` span) and waits for its answer until `deadline`, or until `stop_requested`.
/// The call runs on a short-lived thread so the caller can stop waiting; a late answer is
/// dropped.
pub(crate) fn extend_before<B: LockBackend + 'static>(
    backend: &Arc<B>,
    tracker: &Arc<LeaseTracker>,
    lease_time: Duration,
    use_db_time: bool,
    deadline: Instant,
    stop_requested: impl Fn() -> bool,
) -> Renewal {
    let (answer, answered) = crossbeam_channel::bounded(1);
    let renewing = Arc::clone(backend);
    let tracker = Arc::clone(tracker);
    let spawned = std::thread::Builder::new()
        .name("leader-renew".into())
        .spawn(move || {
            // The receiver is gone when the caller stopped waiting: the answer is too late.
            let renewal =
                tracker.traced_extend(|| renewing.extend(tracker.lease(), lease_time, use_db_time));
            let _ = answer.send(renewal);
        });
    if let Err(err) = spawned {
        tracing::warn!(error = %err, "could not start a renewal thread");
        return Renewal::Answered(Err(Error::ShutDown));
    }
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match answered.recv_timeout(left.min(STOP_CHECK)) {
            Ok(answer) => return Renewal::Answered(answer),
            Err(RecvTimeoutError::Disconnected) => return Renewal::Answered(Err(Error::ShutDown)),
            Err(RecvTimeoutError::Timeout) if left <= STOP_CHECK => {
                return Renewal::DeadlinePassed;
            }
            Err(RecvTimeoutError::Timeout) if stop_requested() => return Renewal::Stopped,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}
