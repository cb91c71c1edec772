//! Many tenants' locks tried in one backend call: [`AsyncLeaderElector::try_acquire_for_tenants`]
//! and the [`AsyncAcquired`] locks it hands out, for pollers that visit thousands of tenants.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_core::__private::{Orphan, TenantBatch, Won};
use leader_core::{AsyncLockBackend, Error, LeaderRunResult, LeaseContext, SlotRequest, TenantId};

use crate::elector::AsyncLeaderElector;
use crate::held::AsyncHeldLease;
use crate::on_drop::OnDrop;
use crate::orphan::release_orphan;

/// A lock taken by [`AsyncLeaderElector::try_acquire_for_tenants`] whose action has not
/// run yet.
///
/// [`run`](Self::run) runs an action under it and releases it, exactly as
/// [`run_if_leader_with`](AsyncLeaderElector::run_if_leader_with) does after its acquire
/// (renewed beside the action if the options ask for auto-extend; the minimum lease
/// applies). Dropped without running, it is released in the background *without* the
/// minimum lease: the action it was kept for never ran, so another node may take the lock
/// and run it.
///
/// The lease runs from the moment the batch was sent. With auto-extend it is renewed from
/// then on, by a task of its own, one renew interval after the batch was sent and every
/// interval after that, while it waits to be run and while its action runs (as the
/// blocking elector's `leader_blocking::Acquired` is); without, it runs out at its
/// deadline. [`run`](Self::run) checks it right before the action starts: a lease lost by
/// then is released and the action does not run ([`Error::LeaseLost`]).
#[derive(Debug)]
#[must_use = "the lock is released when dropped, without running anything"]
pub struct AsyncAcquired<B: AsyncLockBackend + 'static> {
    held: AsyncHeldLease<B>,
    tenant: TenantId,
    min_lease_time: Duration,
}

impl<B: AsyncLockBackend + 'static> AsyncAcquired<B> {
    /// The tenant whose lock this is.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// The fencing token of this acquisition.
    pub fn fencing_token(&self) -> u64 {
        self.held.lease().fencing_token
    }

    /// The lease's context: deadline, lost flag, lost signal.
    pub fn context(&self) -> &LeaseContext {
        self.held.context()
    }

    /// `true` once the lease was lost or ran out.
    pub fn is_lost(&self) -> bool {
        self.held.context().is_lost()
    }

    /// Runs `action` under the lock, then releases it (keeping the minimum lease): the
    /// result `run_if_leader_with` would give.
    ///
    /// # Errors
    ///
    /// [`Error::LeaseLost`] when the lease was lost before the action could start (it ran
    /// out while the lock waited): the action does not run, and the lock is released in
    /// the background, without the minimum lease.
    ///
    /// # Panics
    ///
    /// If `action` panics, the lease is released and the panic continues.
    pub async fn run<T, E, F, Fut>(self, action: F) -> Result<LeaderRunResult<T, E>, Error>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.held
            .with_min_lease(self.min_lease_time)
            .run_action(0, action)
            .await
    }

    /// Runs `action` under the lock as [`run`](Self::run) does, but leaves the release to
    /// the caller: the result, and the lock (no longer renewed) to release with others in
    /// one call by [`AsyncFinished::release_all`]. For a poller that finishes many jobs.
    ///
    /// # Errors
    ///
    /// [`Error::LeaseLost`] as [`run`](Self::run): the action does not run, and the lock
    /// is released in the background.
    ///
    /// # Panics
    ///
    /// If `action` panics, the lease is released and the panic continues.
    pub async fn run_unreleased<T, E, F, Fut>(
        self,
        action: F,
    ) -> Result<(LeaderRunResult<T, E>, AsyncFinished<B>), Error>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let (result, held) = self
            .held
            .with_min_lease(self.min_lease_time)
            .run_action_unreleased(0, action)
            .await?;
        Ok((result, AsyncFinished { held }))
    }
}

/// A lock whose action has run ([`AsyncAcquired::run_unreleased`]) and that is not released
/// yet.
///
/// It is no longer renewed. [`release_all`](Self::release_all) releases many in one
/// backend call, each keeping its minimum lease; one dropped on its own is released in the
/// background.
#[derive(Debug)]
#[must_use = "the lock is released when dropped"]
pub struct AsyncFinished<B: AsyncLockBackend + 'static> {
    held: AsyncHeldLease<B>,
}

impl<B: AsyncLockBackend + 'static> AsyncFinished<B> {
    /// The fencing token the action ran under.
    pub fn fencing_token(&self) -> u64 {
        self.held.lease().fencing_token
    }

    /// Releases all of `finished`, each keeping its minimum lease, in one
    /// [`release_batch`](AsyncLockBackend::release_batch) call per backend value among
    /// them. A failure is logged: the action's result is real, and the lease runs out by
    /// itself. Dropped before it is done, the locks not yet released are released in the
    /// background.
    pub async fn release_all(finished: Vec<AsyncFinished<B>>) {
        AsyncHeldLease::release_all(finished.into_iter().map(|f| f.held).collect()).await;
    }
}

impl<B: AsyncLockBackend + 'static> AsyncLeaderElector<B> {
    /// Tries the lock `name` of each of `tenants` once (`tenant:<id>:<name>`, as
    /// [`for_tenant`](Self::for_tenant) names it), all in one
    /// [`try_acquire_batch`](AsyncLockBackend::try_acquire_batch) call: one answer per
    /// tenant, in their order, `Some` when this node took the lock. `wait_time` does not
    /// apply.
    ///
    /// A tenant's own failure is its answer alone; a failed request's possible acquisition
    /// is released in the background, and so is every request of a batch whose future is
    /// dropped while it is on its way.
    ///
    /// On an elector that is scoped itself every answer is [`Error::AlreadyScoped`]
    /// (scopes do not nest).
    ///
    /// # Errors
    ///
    /// Per tenant: [`Error::InvalidName`] for a key too long with its prefix,
    /// [`Error::Backend`] for a store error on its key, and [`Error::LeaseLost`] when the
    /// batch was answered after the lease's deadline (`lease_time` from when it was sent:
    /// a paused process, a stalled server) — that lock is released in the background and
    /// nothing may run under it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tokio")]
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// use leader_async::AsyncLeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions, TenantId};
    ///
    /// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let tenants = [TenantId::new("acme")?, TenantId::new("globex")?];
    /// for answer in elector.try_acquire_for_tenants("sync", &tenants).await {
    ///     if let Some(acquired) = answer? {
    ///         let outcome = acquired
    ///             .run(|lease| async move { Ok::<_, std::io::Error>(lease.fencing_token()) })
    ///             .await?;
    ///         assert!(outcome.is_elected());
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn try_acquire_for_tenants(
        &self,
        name: &str,
        tenants: &[TenantId],
    ) -> Vec<Result<Option<AsyncAcquired<B>>, Error>> {
        let backend = self.backend();
        let batch = match TenantBatch::new(self.settings(), backend.name(), name, tenants) {
            Ok(batch) => batch,
            Err(refused) => return refused.into_iter().map(Err).collect(),
        };
        let requests = batch.requests();
        let sent_at = Instant::now();
        // Unless answered, every request may take its lock anyway.
        let in_flight = OnDrop::new(|| {
            for request in requests.requests() {
                let orphan = Orphan::of_request(&SlotRequest::single(*request), sent_at);
                release_orphan(Arc::clone(backend), orphan);
            }
        });
        let answers = backend.try_acquire_batch(requests.requests()).await;
        in_flight.disarm();
        let (answers, orphans) = requests.finish(answers, sent_at, Instant::now());
        for orphan in orphans {
            release_orphan(Arc::clone(backend), orphan);
        }
        let acquired = |won: Won<'_>| AsyncAcquired {
            held: AsyncHeldLease::new(
                Arc::clone(backend),
                won.lease,
                won.sent_at,
                name,
                0,
                won.keepalive,
            )
            .with_min_lease(Duration::ZERO)
            .renewed_from_now(),
            tenant: won.tenant.clone(),
            min_lease_time: won.keepalive.min_lease_time,
        };
        batch
            .answers(answers)
            .into_iter()
            .map(|answer| Ok(answer?.map(acquired)))
            .collect()
    }
}
