//! [`LeaseTracker`]: the elector's side of a [`LeaseContext`], recording renewals and losses.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use event_listener::Event;
use parking_lot::Mutex;

use crate::engine::defects::{Defect, planted};
use crate::engine::late::lease_deadline;
use crate::error::Error;
use crate::leadership::context::{LeaseContext, Shared};
use crate::spi::lease::Lease;
use crate::spi::outcome::{ExtendOutcome, ReleaseOutcome};
use crate::telemetry::HoldProbe;

/// The elector's side of a [`LeaseContext`]: records renewals and losses.
///
/// For elector implementations; actions only see the [`LeaseContext`].
#[derive(Debug)]
pub struct LeaseTracker {
    context: LeaseContext,
    probe: HoldProbe,
    lease_time: Duration,
}

impl LeaseTracker {
    /// Tracks `lease`, acquired by a request sent at `sent_at` for `lease_time`.
    /// `lock_name` is the name the caller used (the key without its tenant prefix);
    /// `backend` the backend's name, for spans and metrics.
    pub fn new(
        lease: Lease,
        lock_name: &str,
        sent_at: Instant,
        lease_time: Duration,
        backend: &'static str,
    ) -> Self {
        LeaseTracker::new_in_slot(lease, lock_name, 0, sent_at, lease_time, backend)
    }

    /// Like [`new`](Self::new), for `slot` of the leader group `lock_name`.
    pub fn new_in_slot(
        lease: Lease,
        lock_name: &str,
        slot: u32,
        sent_at: Instant,
        lease_time: Duration,
        backend: &'static str,
    ) -> Self {
        let display_name = (lock_name != lease.key.as_str()).then(|| lock_name.to_owned());
        LeaseTracker {
            lease_time,
            probe: HoldProbe::start(backend, &lease),
            context: LeaseContext {
                shared: Arc::new(Shared {
                    lease,
                    display_name,
                    slot,
                    deadline: Mutex::new(deadline_of(sent_at, lease_time)),
                    lost: AtomicBool::new(false),
                    lost_event: Event::new(),
                }),
            },
        }
    }

    /// The lease being tracked.
    pub fn lease(&self) -> &Lease {
        &self.context.shared.lease
    }

    /// The lease length the lease was acquired (and is renewed) for.
    pub fn lease_time(&self) -> Duration {
        self.lease_time
    }

    /// The reader side, for the action.
    pub fn context(&self) -> &LeaseContext {
        &self.context
    }

    /// The backend's name, as given to [`new`](Self::new).
    pub fn backend(&self) -> &'static str {
        self.probe.backend()
    }

    /// The `leader.run` span, for the action of `run_if_leader*` (see the crate docs'
    /// `# Tracing`).
    pub fn run_span(&self) -> tracing::Span {
        self.probe.run_span(self.lease())
    }

    /// The `leader.term` span, for a campaign's term.
    pub fn term_span(&self) -> tracing::Span {
        self.probe.term_span(self.lease())
    }

    /// Runs the blocking `extend` call inside `leader.extend`, recording its outcome.
    ///
    /// # Errors
    ///
    /// The call's error.
    pub fn traced_extend(
        &self,
        call: impl FnOnce() -> Result<ExtendOutcome, Error>,
    ) -> Result<ExtendOutcome, Error> {
        self.probe.extend(self.lease(), call)
    }

    /// The `leader.extend` span of a renewal sent with others' (a renewal driver's batch),
    /// to record its answer with [`record_extend`](Self::record_extend).
    pub fn extend_span(&self) -> tracing::Span {
        self.probe.extend_span(self.lease())
    }

    /// Records a renewal's answer on the span [`extend_span`](Self::extend_span) made.
    pub fn record_extend(span: &tracing::Span, answer: &Result<ExtendOutcome, Error>) {
        crate::telemetry::record_extend(span, answer);
    }

    /// Awaits the async `extend` call inside `leader.extend`, recording its outcome.
    ///
    /// # Errors
    ///
    /// The call's error.
    pub fn traced_extend_async<F>(&self, call: F) -> impl Future<Output = F::Output>
    where
        F: Future<Output = Result<ExtendOutcome, Error>>,
    {
        self.probe.extend_async(self.lease(), call)
    }

    /// Runs the blocking `release` call inside `leader.release`, recording its outcome
    /// (and counting a `Released`).
    ///
    /// # Errors
    ///
    /// The call's error.
    pub fn traced_release(
        &self,
        call: impl FnOnce() -> Result<ReleaseOutcome, Error>,
    ) -> Result<ReleaseOutcome, Error> {
        self.probe.release(self.lease(), call)
    }

    /// Awaits the async `release` call inside `leader.release`, recording its outcome.
    ///
    /// # Errors
    ///
    /// The call's error.
    pub fn traced_release_async<'a, F>(&'a self, call: F) -> impl Future<Output = F::Output> + 'a
    where
        F: Future<Output = Result<ReleaseOutcome, Error>> + 'a,
    {
        self.probe.release_async(self.lease(), call)
    }

    /// A campaign term began with this lease.
    pub(crate) fn leadership_gained(&self) {
        self.probe.leadership_gained(self.lease());
    }

    /// A campaign term ended for `reason`.
    pub(crate) fn leadership_lost(&self, reason: &'static str) {
        self.probe.leadership_lost(self.lease(), reason);
    }

    /// The lease was lost before its release (counted once).
    pub(crate) fn count_lost(&self) {
        self.probe.lost(self.lease());
    }

    /// The lease is lost before its release (its deadline passed unrenewed, or it cannot be
    /// renewed): marks it lost and counts it in `leader_lease_lost_total`. A resignation
    /// uses [`mark_lost`](Self::mark_lost) instead, which counts nothing.
    pub fn lose(&self) {
        self.count_lost();
        self.mark_lost();
    }

    /// A renewal sent at `sent_at` succeeded, answered at `now` (both read by the caller):
    /// the lease lasts `lease_time` from `sent_at`.
    ///
    /// Returns `false`, and marks the lease lost, when the answer came too late: the lease
    /// was already lost, or its deadline passed (by `now`) while the renewal was on its way. A lease
    /// that ended stays ended: the action (or the campaign's term) was told, and another
    /// node may have taken the lock meanwhile, so a late "renewed" never brings it back.
    pub fn renewed(&self, sent_at: Instant, lease_time: Duration, now: Instant) -> bool {
        {
            let mut deadline = self.context.shared.deadline.lock();
            let lost = self.context.shared.lost.load(Ordering::Acquire);
            if !lost && (now < *deadline || planted(Defect::RenewAfterDeadline)) {
                *deadline = (*deadline).max(deadline_of(sent_at, lease_time));
                return true;
            }
        }
        self.mark_lost();
        false
    }

    /// Records the answer to a renewal sent at `sent_at`, answered at `now` (both read by
    /// the caller); `false` when the lease is now lost and renewing should stop.
    ///
    /// The first failed or refused renewal marks the lease lost: the action is told at once
    /// rather than left running on a lease that may be gone. A transient error
    /// could have been retried, but the lease would then be trusted past a renewal nobody
    /// confirmed; failing fast is the safe side. (A batch's transient answer is not yet a
    /// failed renewal: see [`renew_alone_after`](Self::renew_alone_after).)
    pub fn record_renewal(
        &self,
        answer: Result<ExtendOutcome, Error>,
        sent_at: Instant,
        lease_time: Duration,
        now: Instant,
    ) -> bool {
        let key = &self.lease().key;
        match answer {
            Ok(ExtendOutcome::Extended { .. }) => {
                let in_time = self.renewed(sent_at, lease_time, now);
                if !in_time {
                    self.count_lost();
                    tracing::warn!(lock = %key, "lease lost: the renewal was answered after the deadline");
                }
                in_time
            }
            Ok(ExtendOutcome::NotHeld) => {
                tracing::warn!(lock = %key, "lease lost: renewal found it gone");
                self.count_lost();
                self.mark_lost();
                false
            }
            Err(err) => {
                tracing::warn!(lock = %key, error = %err, "lease lost: renewal failed");
                self.count_lost();
                self.mark_lost();
                false
            }
        }
    }

    /// Whether `answer`, this lease's answer from a batch of renewals sent together
    /// ([`LockBackend::extend_batch`](crate::LockBackend::extend_batch) of a backend whose
    /// batch is native), must first be asked again with this lease's own `extend` rather
    /// than recorded: a transient error in a batch answer.
    ///
    /// A batch is an optimisation, and its transient errors can be the batch's, not the
    /// lease's: PostgreSQL's batch skips a row another session holds locked for a moment
    /// (a contender's refused acquire does, until it commits) so that one busy row holds up
    /// no other lease. The single `extend` waits for the row. So such a lease is renewed
    /// alone, still racing its deadline, and only that answer is recorded
    /// ([`record_renewal`](Self::record_renewal)): a renewal fails only when the lease is
    /// really gone, the single call fails too, or the deadline passes.
    pub fn renew_alone_after(answer: &Result<ExtendOutcome, Error>) -> bool {
        matches!(answer, Err(err) if err.is_transient())
    }

    /// How long a renewal sent at `now` may take: the time left until the deadline. Electors
    /// race every renewal against it and call [`renewal_unanswered`](Self::renewal_unanswered)
    /// when it runs out, whatever the driver's own timeout: a renewal answered after the
    /// deadline cannot bring back a lease that another node may already hold.
    pub fn renewal_budget(&self, now: Instant) -> Duration {
        if planted(Defect::RenewAfterDeadline) {
            return self.lease_time;
        }
        self.context.deadline().saturating_duration_since(now)
    }

    /// Whether the lease is lost at `now` (read by the caller): marked lost, or past its
    /// deadline.
    pub fn is_lost_at(&self, now: Instant) -> bool {
        self.context.is_lost_at(now)
    }

    /// The deadline passed while a renewal was unanswered: the lease is lost at this moment,
    /// since another node may take the lock now.
    pub fn renewal_unanswered(&self) {
        tracing::warn!(lock = %self.lease().key, "lease lost: the renewal was not answered before the deadline");
        self.count_lost();
        self.mark_lost();
    }

    /// The lease is gone (or could not be renewed in time): wake everyone watching.
    pub fn mark_lost(&self) {
        let shared = &self.context.shared;
        if !shared.lost.swap(true, Ordering::AcqRel) {
            shared.lost_event.notify(usize::MAX);
        }
    }

    /// Called when the action returns, at `now` (read by the caller): whether the lease
    /// was lost before that (marked lost or past its deadline), logged at `warn` when it
    /// was, since another node may
    /// have run the same job meanwhile. Electors report it in
    /// [`LeaderRunResult::Elected::lease_lost`](crate::LeaderRunResult::Elected::lease_lost).
    pub fn lost_before_return(&self, now: Instant) -> bool {
        let lost = self.context.is_lost_at(now);
        if lost {
            self.count_lost();
            tracing::warn!(
                lock = %self.lease().key,
                fencing_token = self.lease().fencing_token,
                "the action returned after its lease was lost; another node may have run it meanwhile"
            );
        }
        lost
    }

    /// Right before an action (or a campaign's term) starts on this lease, at `now` (read
    /// by the caller), perhaps long after it was acquired: `Ok(())` while it is held. Once
    /// it is lost (its deadline passed by `now`, or it was marked lost), it is marked lost, counted in
    /// `leader_lease_lost_total` and logged, and the result is [`Error::LeaseLost`]: the
    /// action must not start, and the caller releases the lease without its minimum lease
    /// (the action never ran).
    ///
    /// # Errors
    ///
    /// [`Error::LeaseLost`] naming the lock.
    pub fn check_start(&self, now: Instant) -> Result<(), Error> {
        let lost = if planted(Defect::ActionOnLateLease) {
            self.is_marked_lost()
        } else {
            self.context.is_lost_at(now)
        };
        if !lost {
            return Ok(());
        }
        self.count_lost();
        self.mark_lost();
        let lease = self.lease();
        Err(crate::engine::late::lost_before_start(
            &lease.key,
            lease.fencing_token,
        ))
    }

    /// Whether the lease was marked lost (the deadline alone does not count here).
    pub fn is_marked_lost(&self) -> bool {
        self.context.shared.lost.load(Ordering::Acquire)
    }
}

/// The deadline of a lease sent for at `sent_at` ([`lease_deadline`]); one past the
/// clock's range is never reached, so it is as far as the clock goes from `sent_at`.
fn deadline_of(sent_at: Instant, lease_time: Duration) -> Instant {
    lease_deadline(sent_at, lease_time)
        .or_else(|| sent_at.checked_add(Duration::from_secs(u64::from(u32::MAX))))
        .unwrap_or(sent_at)
}

impl Drop for LeaseTracker {
    fn drop(&mut self) {
        self.probe.end(self.lease());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LockName, OwnerToken};
    use std::time::SystemTime;

    fn tracker(lease_time: Duration) -> LeaseTracker {
        let lease = Lease::new(
            LockName::new("k").unwrap(),
            OwnerToken::random(),
            "node",
            7,
            SystemTime::now(),
            SystemTime::now(),
        );
        LeaseTracker::new(lease, "k", Instant::now(), lease_time, "test")
    }

    #[test]
    fn lost_is_seen_by_flag_future_and_check() {
        let t = tracker(Duration::from_secs(60));
        let ctx = t.context().clone();
        assert!(!ctx.is_lost());
        assert!(ctx.check().is_ok());
        assert_eq!(ctx.fencing_token(), 7);
        t.mark_lost();
        assert!(ctx.is_lost());
        assert!(matches!(ctx.check(), Err(Error::LeaseLost { key }) if key == "k"));
        futures::executor::block_on(ctx.lost());
        assert!(ctx.wait_lost_timeout(Duration::from_secs(5)));
    }

    #[test]
    fn wait_lost_timeout_waits_the_whole_timeout_across_renewals() {
        let lease = Duration::from_millis(300);
        let t = Arc::new(tracker(lease));
        let renewing = Arc::clone(&t);
        let renewer = std::thread::spawn(move || {
            for _ in 0..6 {
                std::thread::sleep(Duration::from_millis(50));
                let now = Instant::now();
                assert!(renewing.renewed(now, lease, now));
            }
        });
        let started = Instant::now();
        // Past the first deadline (300 ms), which the renewals moved on.
        assert!(!t.context().wait_lost_timeout(Duration::from_millis(500)));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(500),
            "returned after {waited:?}"
        );
        renewer.join().unwrap();
        assert!(
            t.context().wait_lost_timeout(Duration::from_secs(5)),
            "lost once renewals stop"
        );
    }

    #[test]
    fn a_renewal_in_time_moves_the_deadline() {
        let t = tracker(Duration::from_secs(60));
        let before = t.context().deadline();
        let now = Instant::now();
        assert!(t.renewed(now, Duration::from_secs(120), now));
        assert!(t.context().deadline() > before);
        assert!(!t.context().is_lost());
        assert!(!t.context().wait_lost_timeout(Duration::from_millis(5)));
    }

    #[test]
    fn the_deadline_counts_as_lost_and_a_late_renewal_does_not_revive_it() {
        let t = tracker(Duration::from_millis(1));
        let sent_at = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        assert!(t.context().is_lost());
        assert!(!t.is_marked_lost());
        assert!(!t.renewed(sent_at, Duration::from_secs(60), Instant::now()));
        assert!(t.context().is_lost());
        assert!(t.is_marked_lost(), "a late renewal ends the lease for good");
        let answer = Ok(ExtendOutcome::Extended {
            expires_at: std::time::SystemTime::now(),
        });
        let now = Instant::now();
        assert!(!t.record_renewal(answer, now, Duration::from_secs(60), now));
        assert!(t.context().is_lost());
    }

    #[test]
    fn only_a_transient_batch_answer_is_asked_again_alone() {
        use crate::error::{BackendError, BackendErrorKind};
        let error = |kind| {
            Err(Error::Backend(BackendError::new(
                "postgres",
                "k",
                kind,
                "its row is locked by another session",
            )))
        };
        assert!(LeaseTracker::renew_alone_after(&error(
            BackendErrorKind::Transient
        )));
        assert!(!LeaseTracker::renew_alone_after(&error(
            BackendErrorKind::Permanent
        )));
        assert!(!LeaseTracker::renew_alone_after(&Ok(
            ExtendOutcome::NotHeld
        )));
        let renewed = Ok(ExtendOutcome::Extended {
            expires_at: SystemTime::now(),
        });
        assert!(!LeaseTracker::renew_alone_after(&renewed));
    }

    /// A tracker of a lease sent for at `sent_at`.
    fn tracker_at(sent_at: Instant, lease_time: Duration) -> LeaseTracker {
        let lease = Lease::new(
            LockName::new("k").unwrap(),
            OwnerToken::random(),
            "node",
            7,
            SystemTime::now(),
            SystemTime::now(),
        );
        LeaseTracker::new(lease, "k", sent_at, lease_time, "test")
    }

    #[test]
    fn the_deadline_is_judged_at_the_given_now_not_the_machines_clock() {
        let lease_time = Duration::from_secs(30);
        // Far from the machine's clock both ways: a lease sent an hour ago as the machine's
        // clock goes is still held at the instants given, one sent an hour ahead is lost
        // at its deadline.
        let ahead = Instant::now() + Duration::from_secs(3600);
        let deadline = lease_deadline(ahead, lease_time).unwrap();
        let t = tracker_at(ahead, lease_time);
        assert!(t.check_start(deadline - Duration::from_millis(1)).is_ok());
        assert_eq!(
            t.renewal_budget(deadline - Duration::from_secs(10)),
            Duration::from_secs(10)
        );
        assert_eq!(
            t.renewal_budget(deadline + Duration::from_millis(1)),
            Duration::ZERO
        );
        assert!(!t.lost_before_return(deadline - Duration::from_millis(1)));
        assert!(t.lost_before_return(deadline + Duration::from_millis(1)));
        assert!(!t.is_marked_lost(), "reporting does not mark it");
        assert!(matches!(
            t.check_start(deadline + Duration::from_millis(1)),
            Err(Error::LeaseLost { .. })
        ));
        assert!(
            t.is_marked_lost(),
            "a lease found over at start is over for good"
        );

        // A renewal answered before the deadline at the given instant moves it; one
        // answered at it does not, and ends the lease.
        let t = tracker_at(ahead, lease_time);
        let sent = ahead + Duration::from_secs(20);
        let extended = || {
            Ok(ExtendOutcome::Extended {
                expires_at: SystemTime::now(),
            })
        };
        assert!(t.record_renewal(
            extended(),
            sent,
            lease_time,
            deadline - Duration::from_millis(1)
        ));
        assert_eq!(t.context().deadline(), deadline_of(sent, lease_time));
        let next = deadline_of(sent, lease_time);
        assert!(!t.record_renewal(extended(), next - Duration::from_secs(1), lease_time, next));
        assert!(t.is_marked_lost());

        let Some(behind) = Instant::now().checked_sub(Duration::from_secs(3600)) else {
            return;
        };
        let t = tracker_at(behind, lease_time);
        assert!(t.check_start(behind + Duration::from_secs(1)).is_ok());
        assert!(t.renewed(
            behind + Duration::from_secs(10),
            lease_time,
            behind + Duration::from_secs(11)
        ));
        assert!(!t.lost_before_return(behind + Duration::from_secs(12)));
    }
}
