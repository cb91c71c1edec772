//! The acquire loop: try, and while the lock is held elsewhere, wait for a release
//! notification or the next backoff step, until `wait_time` runs out.

use std::time::Instant;

use leader_core::{
    AcquireOutcome, AcquireRequest, Backoff, Error, LeaderElectionOptions, LeaderLease, Lease,
    LockBackend, LockName, OwnerToken,
};

/// What the acquire loop ended with.
pub(crate) enum Attempt {
    /// Acquired; the instant the winning request was sent (the lease's monotonic start).
    Acquired(Lease, Instant),
    /// Still held elsewhere when the wait ended; the last holder seen.
    #[allow(dead_code)] // read by the must-run lock guard (continuous-leadership issue)
    Held(Option<LeaderLease>),
}

pub(crate) fn acquire<B: LockBackend>(
    backend: &B,
    options: &LeaderElectionOptions,
    key: &LockName,
) -> Result<Attempt, Error> {
    let owner = OwnerToken::random();
    let request = AcquireRequest {
        key,
        owner,
        leader_id: options.node_id(),
        lease_time: options.lease_time(),
        use_db_time: options.use_db_time(),
    };
    let waits = !options.wait_time().is_zero();
    let mut backoff: Option<Backoff> = None;
    loop {
        // Listen before trying, so a release right after a failed attempt is not missed.
        let listener = match backend.release_events() {
            Some(events) if waits => Some(events.listen(key.as_str())),
            _ => None,
        };
        let requested_at = Instant::now();
        let holder = match backend.try_acquire(request)? {
            AcquireOutcome::Acquired(lease) => {
                tracing::debug!(lock = %key, fencing_token = lease.fencing_token, "acquired");
                return Ok(Attempt::Acquired(lease, requested_at));
            }
            AcquireOutcome::Held(holder) => holder,
        };
        let delay = backoff
            .get_or_insert_with(|| Backoff::starting_at(requested_at, options.wait_time()))
            .next_delay();
        let Some(delay) = delay else {
            tracing::debug!(lock = %key, holder = ?holder.as_ref().map(|h| &h.leader_id), "held elsewhere");
            return Ok(Attempt::Held(holder));
        };
        match listener {
            Some(listener) => {
                listener.wait_timeout(delay);
            }
            None => std::thread::sleep(delay),
        }
    }
}
