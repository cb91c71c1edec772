//! A held lease in async code: renewed beside the action (or from the moment it was taken,
//! for a lease won in a batch), released exactly once, also when the future holding it is
//! dropped.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_lite::FutureExt;
use futures_util::FutureExt as _;
use leader_core::__private::{
    Keepalive, LeaseTracker, RenewalSchedule, answers_in_order, by_backend,
};
use leader_core::{AsyncLockBackend, Error, LeaderRunResult, Lease, LeaseContext, ReleaseRequest};
use tracing::Instrument;

use crate::orphan::after_release;
use crate::release::{release, release_in_background};
use crate::rt;
use crate::stop::StopSignal;

/// Owns an acquisition until released. If it is dropped unreleased (the caller's future
/// was cancelled), a release is spawned on the runtime, and finished on a thread of its
/// own should the runtime shut down first.
#[derive(Debug)]
pub(crate) struct AsyncHeldLease<B: AsyncLockBackend + 'static> {
    backend: Arc<B>,
    tracker: Arc<LeaseTracker>,
    keepalive: Keepalive,
    /// When the lease is renewed (`None`: not auto-extended), counted from its acquire.
    schedule: Option<RenewalSchedule>,
    /// Stops the task renewing the lease in the background, for a lease renewed from the
    /// moment it was taken ([`renewed_from_now`](Self::renewed_from_now)); `None` when the
    /// future running its action renews it.
    background: Option<StopSignal>,
    released: bool,
}

impl<B: AsyncLockBackend + 'static> AsyncHeldLease<B> {
    pub(crate) fn new(
        backend: Arc<B>,
        lease: Lease,
        sent_at: Instant,
        lock_name: &str,
        slot: u32,
        keepalive: Keepalive,
    ) -> Self {
        let tracker = LeaseTracker::new_in_slot(
            lease,
            lock_name,
            slot,
            sent_at,
            keepalive.lease_time,
            backend.name(),
        );
        AsyncHeldLease {
            backend,
            tracker: Arc::new(tracker),
            keepalive,
            schedule: keepalive.schedule(sent_at),
            background: None,
            released: false,
        }
    }

    /// The same lease, renewed from now on by a task of its own rather than beside its
    /// action: for a lease won in a batch, which may wait for a worker before its action
    /// runs, so that it is renewed on its own schedule from the moment it was taken (as
    /// the blocking renewal driver renews it) and `lost()` resolves at its deadline. The
    /// renewals stop when the action returns, or when the lease is released or dropped.
    pub(crate) fn renewed_from_now(mut self) -> Self {
        if self.background.is_none() && self.schedule.is_some() {
            let stop = StopSignal::default();
            self.spawn_watchdog(stop.clone().stopped());
            self.background = Some(stop);
        }
        self
    }

    /// Stops the background renewals, if any.
    fn stop_renewing(&self) {
        if let Some(stop) = &self.background {
            stop.stop();
        }
    }

    pub(crate) fn context(&self) -> &LeaseContext {
        self.tracker.context()
    }

    pub(crate) fn lease(&self) -> &Lease {
        self.tracker.lease()
    }

    /// Whether the lease was lost before the action returned (see
    /// [`LeaseTracker::lost_before_return`]).
    pub(crate) fn lost_before_return(&self) -> bool {
        self.tracker.lost_before_return(Instant::now())
    }

    /// Runs `action` to completion while the watchdog keeps the lease (or marks it lost
    /// at its deadline), then stops renewing it; a panic in the action is caught and
    /// handed back.
    ///
    /// A combinator, not an `async fn`: an `async fn` would keep `action` beside the
    /// future it awaits, a second copy of it in every run's future.
    pub(crate) fn run<F: Future>(
        &self,
        action: F,
        span: tracing::Span,
    ) -> impl Future<Output = Result<F::Output, Box<dyn Any + Send + 'static>>> {
        // A lease renewed by a task of its own needs no watchdog beside its action.
        let renewed_apart = self.background.is_some();
        let watchdog = async move {
            if !renewed_apart {
                watch(
                    &*self.backend,
                    &self.tracker,
                    &self.keepalive,
                    self.schedule,
                )
                .await;
            }
            std::future::pending().await
        };
        let action = AssertUnwindSafe(action.instrument(span));
        FutureExt::catch_unwind(action)
            .or(watchdog)
            .map(move |outcome| {
                self.stop_renewing();
                outcome
            })
    }

    /// The same lease, released with `min_lease_time` instead of the options' minimum lease.
    pub(crate) fn with_min_lease(mut self, min_lease_time: Duration) -> Self {
        self.keepalive.min_lease_time = min_lease_time;
        self
    }

    /// The lease, if an action may still start under it; once it is lost (see
    /// [`LeaseTracker::check_start`]) it is released in the background without the
    /// minimum lease (the action never ran) and the error is [`Error::LeaseLost`].
    pub(crate) fn check_start(mut self) -> Result<Self, Error> {
        if let Err(lost) = self.tracker.check_start(Instant::now()) {
            self.keepalive.min_lease_time = Duration::ZERO;
            drop(self);
            return Err(lost);
        }
        Ok(self)
    }

    /// Runs `action` under the lease (in slot `slot`), then releases it: the run's result,
    /// or [`Error::LeaseLost`] when the lease was lost before the action could start. A
    /// panic in the action continues once the lease is released.
    pub(crate) async fn run_action<T, E, F, Fut>(
        self,
        slot: u32,
        action: F,
    ) -> Result<LeaderRunResult<T, E>, Error>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let held = self.check_start()?;
        // No await on a helper of its own: every layer of futures counts against the
        // compiler's recursion limit where runs nest (a group run inside a group run).
        let span = held.tracker.run_span();
        let outcome = held.run(action(held.context().clone()), span.clone()).await;
        let result = span.in_scope(|| held.result_of(outcome, slot));
        held.release().await;
        Ok(result.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    }

    /// Runs `action` under the lease (in slot `slot`), renewed beside it: the run's
    /// result, and the lease still to release; or [`Error::LeaseLost`] (the lease
    /// released) when it was lost before the action could start. A panic in the action
    /// continues once the lease is released.
    pub(crate) async fn run_action_unreleased<T, E, F, Fut>(
        self,
        slot: u32,
        action: F,
    ) -> Result<(LeaderRunResult<T, E>, Self), Error>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let held = self.check_start()?;
        let span = held.tracker.run_span();
        let outcome = held.run(action(held.context().clone()), span.clone()).await;
        match span.in_scope(|| held.result_of(outcome, slot)) {
            Ok(result) => Ok((result, held)),
            Err(panic) => {
                held.release().await;
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// The result of a run (in slot `slot`) whose action ended with `outcome`, or the
    /// action's panic. Called inside the run's span, so that a trace shows a loss found
    /// here before the action's end.
    fn result_of<T, E>(
        &self,
        outcome: Result<Result<T, E>, Box<dyn Any + Send + 'static>>,
        slot: u32,
    ) -> Result<LeaderRunResult<T, E>, Box<dyn Any + Send + 'static>> {
        let lease_lost = self.lost_before_return();
        match outcome {
            Ok(Ok(value)) => Ok(LeaderRunResult::elected_in_slot(
                value,
                self.lease(),
                slot,
                lease_lost,
            )),
            Ok(Err(error)) => Ok(LeaderRunResult::ActionFailed(error)),
            Err(panic) => Err(panic),
        }
    }

    /// Releases every lease of `held` (each honouring its minimum lease) with one
    /// `release_batch` call per backend value among them; a lease whose release failed
    /// transiently is released again in the background, other failures are logged.
    /// Dropped before it is done, the leases not yet released are released in the
    /// background.
    pub(crate) async fn release_all(held: Vec<Self>) {
        for h in &held {
            h.stop_renewing();
        }
        for (backend, mut batch) in by_backend(held, |h| &h.backend) {
            let requests: Vec<_> = batch
                .iter()
                .map(|h| ReleaseRequest::new(h.lease(), h.keepalive.min_lease_time))
                .collect();
            let answers = backend.release_batch(&requests).await;
            let keys = batch.iter().map(|h| &h.lease().key);
            let answers: Vec<_> = answers_in_order(backend.name(), keys, answers).collect();
            for (h, answer) in batch.iter_mut().zip(answers) {
                h.released = true;
                let answer = h.tracker.traced_release(|| answer);
                let min_lease_time = h.keepalive.min_lease_time;
                if let Err(err) = after_release(&backend, &h.tracker, min_lease_time, answer) {
                    tracing::warn!(lock = %h.lease().key, error = %err, "release failed");
                }
            }
        }
    }

    /// Keeps the lease in the background until `stop` resolves (for lock guards, whose
    /// holder is not a single future).
    pub(crate) fn spawn_watchdog(&self, stop: impl Future<Output = ()> + Send + 'static) {
        let backend = Arc::clone(&self.backend);
        let tracker = Arc::clone(&self.tracker);
        let keepalive = self.keepalive;
        let schedule = self.schedule;
        rt::spawn_detached(async move {
            watch(&*backend, &tracker, &keepalive, schedule)
                .or(stop)
                .await;
        });
    }

    /// Releases the lock (honouring the minimum lease); a failure is logged, since the
    /// action's outcome is already real (a transient one goes on in the background).
    pub(crate) async fn release(mut self) {
        self.released = true;
        self.stop_renewing();
        let answer = release(&self.backend, &self.tracker, self.keepalive.min_lease_time).await;
        match answer {
            Ok(outcome) => tracing::debug!(lock = %self.lease().key, ?outcome, "released"),
            Err(err) => {
                tracing::warn!(lock = %self.lease().key, error = %err, "release failed");
            }
        }
    }
}

impl<B: AsyncLockBackend + 'static> Drop for AsyncHeldLease<B> {
    fn drop(&mut self) {
        self.stop_renewing();
        if self.released {
            return;
        }
        tracing::debug!(lock = %self.lease().key, "cancelled while holding: releasing in the background");
        release_in_background(&self.backend, &self.tracker, self.keepalive.min_lease_time);
    }
}

/// Renews the lease on `schedule` (one interval after the acquire was sent, then after each
/// renewal was sent; at once when that is past) until it is lost; without renewals, marks
/// the lease lost when its deadline passes so that `LeaseContext::lost` resolves. Each
/// renewal races the deadline: unanswered by then, the lease is lost at that moment.
async fn watch<B: AsyncLockBackend>(
    backend: &B,
    tracker: &LeaseTracker,
    keepalive: &Keepalive,
    schedule: Option<RenewalSchedule>,
) {
    let Some(mut schedule) = schedule else {
        rt::sleep_until(tracker.context().deadline()).await;
        tracker.lose();
        return;
    };
    loop {
        rt::sleep_until(schedule.due()).await;
        let sent_at = Instant::now();
        let renewal =
            tracker.traced_extend_async(backend.extend(keepalive.renewal(tracker.lease())));
        let Some(answer) = rt::timeout(tracker.renewal_budget(Instant::now()), renewal).await
        else {
            tracker.renewal_unanswered();
            return;
        };
        if !tracker.record_renewal(answer, sent_at, keepalive.lease_time, Instant::now()) {
            return;
        }
        schedule.renewed(sent_at);
    }
}
