//! A held lease: renewed by the backend's renewal driver if asked, released exactly once
//! (also on panic).

use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_core::__private::{Keepalive, LeaseTracker, answers_in_order, by_backend};
use leader_core::{
    Error, LeaderRunResult, Lease, LeaseContext, LockBackend, ReleaseOutcome, ReleaseRequest,
};

use crate::orphan::after_release;
use crate::renewals::{Registration, Renewals};

/// Owns an acquisition until it is released; dropping it releases (so a panicking action
/// still frees the lock before the panic goes on).
#[derive(Debug)]
pub(crate) struct HeldLease<B: LockBackend + 'static> {
    backend: Arc<B>,
    tracker: Arc<LeaseTracker>,
    renewals: Option<Registration<B>>,
    min_lease_time: Duration,
    released: bool,
}

impl<B: LockBackend + 'static> HeldLease<B> {
    pub(crate) fn new(
        backend: Arc<B>,
        lease: Lease,
        sent_at: Instant,
        lock_name: &str,
        slot: u32,
        keepalive: Keepalive,
    ) -> Self {
        let tracker = Arc::new(LeaseTracker::new_in_slot(
            lease,
            lock_name,
            slot,
            sent_at,
            keepalive.lease_time,
            backend.name(),
        ));
        let renewals = keepalive.schedule(sent_at).map(|schedule| {
            Renewals::of(&backend).register(Arc::clone(&tracker), schedule, keepalive)
        });
        HeldLease {
            backend,
            tracker,
            renewals,
            min_lease_time: keepalive.min_lease_time,
            released: false,
        }
    }

    pub(crate) fn context(&self) -> &LeaseContext {
        self.tracker.context()
    }

    pub(crate) fn lease(&self) -> &Lease {
        self.tracker.lease()
    }

    /// The `leader.run` span, for the action.
    pub(crate) fn run_span(&self) -> tracing::Span {
        self.tracker.run_span()
    }

    /// Whether the lease was lost before the action returned (see
    /// [`LeaseTracker::lost_before_return`]).
    pub(crate) fn lost_before_return(&self) -> bool {
        self.tracker.lost_before_return(Instant::now())
    }

    /// The same lease, released with `min_lease_time` instead of the options' minimum lease.
    pub(crate) fn with_min_lease(mut self, min_lease_time: Duration) -> Self {
        self.min_lease_time = min_lease_time;
        self
    }

    /// The lease, if an action may still start under it; once it is lost (see
    /// [`LeaseTracker::check_start`]) it is released at once without the minimum lease
    /// (the action never ran) and the error is [`Error::LeaseLost`].
    pub(crate) fn check_start(mut self) -> Result<Self, Error> {
        if let Err(lost) = self.tracker.check_start(Instant::now()) {
            self.min_lease_time = Duration::ZERO;
            drop(self);
            return Err(lost);
        }
        Ok(self)
    }

    /// Runs `action` under the lease (in slot `slot`), then releases it: the run's result,
    /// or [`Error::LeaseLost`] when the lease was lost before the action could start.
    pub(crate) fn run_action<T, E>(
        self,
        slot: u32,
        action: impl FnOnce(&LeaseContext) -> Result<T, E>,
    ) -> Result<LeaderRunResult<T, E>, Error> {
        let (result, held) = self.run_action_unreleased(slot, action)?;
        if let Err(err) = held.release() {
            // The action has run and its result is real; the release goes on in the
            // background.
            tracing::warn!(error = %err, "release after the action failed");
        }
        Ok(result)
    }

    /// Runs `action` under the lease (in slot `slot`) and stops renewing it: the run's
    /// result, and the lease still to release; or [`Error::LeaseLost`] (the lease
    /// released) when it was lost before the action could start.
    pub(crate) fn run_action_unreleased<T, E>(
        self,
        slot: u32,
        action: impl FnOnce(&LeaseContext) -> Result<T, E>,
    ) -> Result<(LeaderRunResult<T, E>, Self), Error> {
        let mut held = self.check_start()?;
        let span = held.run_span();
        let outcome = span.in_scope(|| action(held.context()));
        // Inside the run's span: a trace shows the loss before the action's end.
        let lease_lost = span.in_scope(|| held.lost_before_return());
        drop(held.renewals.take());
        let result = match outcome {
            Ok(value) => LeaderRunResult::elected_in_slot(value, held.lease(), slot, lease_lost),
            Err(error) => LeaderRunResult::ActionFailed(error),
        };
        Ok((result, held))
    }

    /// Releases every lease of `held` (each honouring its minimum lease) with one
    /// `release_batch` call per backend value among them; a lease whose release failed
    /// transiently is released again in the background, other failures are logged.
    pub(crate) fn release_all(held: Vec<Self>) {
        for (backend, mut batch) in by_backend(held, |h| &h.backend) {
            for h in &mut batch {
                h.released = true;
                drop(h.renewals.take());
            }
            let requests: Vec<_> = batch
                .iter()
                .map(|h| ReleaseRequest::new(h.tracker.lease(), h.min_lease_time))
                .collect();
            let answers = backend.release_batch(&requests);
            let keys = batch.iter().map(|h| &h.tracker.lease().key);
            for (h, answer) in batch
                .iter()
                .zip(answers_in_order(backend.name(), keys, answers))
            {
                let answer = h.tracker.traced_release(|| answer);
                let answer = after_release(&backend, &h.tracker, h.min_lease_time, answer);
                if let Err(err) = answer {
                    tracing::warn!(lock = %h.tracker.lease().key, error = %err, "release failed");
                }
            }
        }
    }

    /// [`release_all`](Self::release_all) on the backends' release threads (those of
    /// orphaned leases): the caller returns without waiting for the store.
    pub(crate) fn release_all_in_background(held: Vec<Self>) {
        for (backend, batch) in by_backend(held, |h| &h.backend) {
            crate::orphan::release_in_background(&backend, move || {
                HeldLease::release_all(batch);
            });
        }
    }

    /// Stops renewing and releases the lock (honouring the minimum lease).
    pub(crate) fn release(mut self) -> Result<ReleaseOutcome, Error> {
        self.release_now()
    }

    fn release_now(&mut self) -> Result<ReleaseOutcome, Error> {
        self.released = true;
        // No renewal is scheduled after this. One the driver already took into a batch may
        // still be sent; it lands on a released lock, where ownership makes it a no-op.
        drop(self.renewals.take());
        let outcome = self.tracker.traced_release(|| {
            self.backend.release(ReleaseRequest::new(
                self.tracker.lease(),
                self.min_lease_time,
            ))
        });
        let outcome = after_release(&self.backend, &self.tracker, self.min_lease_time, outcome);
        tracing::debug!(lock = %self.tracker.lease().key, outcome = ?outcome.as_ref().ok(), "released");
        outcome
    }
}

impl<B: LockBackend + 'static> Drop for HeldLease<B> {
    fn drop(&mut self) {
        if !self.released
            && let Err(err) = self.release_now()
        {
            tracing::warn!(lock = %self.tracker.lease().key, error = %err, "release failed");
        }
    }
}
