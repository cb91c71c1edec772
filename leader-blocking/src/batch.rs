//! Many tenants' locks tried in one backend call: [`LeaderElector::try_acquire_for_tenants`]
//! and the [`Acquired`] locks it hands out, for pollers that visit thousands of tenants.

use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_core::__private::{TenantBatch, Won};
use leader_core::{Error, LeaderRunResult, LeaseContext, LockBackend, TenantId};

use crate::elector::LeaderElector;
use crate::held::HeldLease;
use crate::orphan::release_orphan;

/// A lock taken by [`LeaderElector::try_acquire_for_tenants`] whose action has not run yet.
///
/// [`run`](Self::run) runs an action under it and releases it, exactly as
/// [`run_if_leader_with`](LeaderElector::run_if_leader_with) does after its acquire (the
/// minimum lease applies). Dropped without running, it is released at once *without* the
/// minimum lease: the action it was kept for never ran, so another node may take the lock
/// and run it.
///
/// The lease runs from the moment the batch was sent. While the lock waits to be run it
/// is renewed if the elector's options ask for auto-extend; otherwise it runs out at its
/// deadline. [`run`](Self::run) checks it right before the action starts: a lease lost by
/// then is released and the action does not run ([`Error::LeaseLost`]).
#[derive(Debug)]
#[must_use = "the lock is released when dropped, without running anything"]
pub struct Acquired<B: LockBackend + 'static> {
    held: HeldLease<B>,
    tenant: TenantId,
    min_lease_time: Duration,
}

impl<B: LockBackend + 'static> Acquired<B> {
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
    /// out while the lock waited, or its renewal failed): the action does not run, and the
    /// lock is released at once, without the minimum lease.
    ///
    /// # Panics
    ///
    /// If `action` panics, the lease is released and the panic continues.
    pub fn run<T, E>(
        self,
        action: impl FnOnce(&LeaseContext) -> Result<T, E>,
    ) -> Result<LeaderRunResult<T, E>, Error> {
        self.held
            .with_min_lease(self.min_lease_time)
            .run_action(0, action)
    }

    /// Releases all of `acquired` without running anything and without the minimum lease,
    /// as dropping each would, but in the background: one
    /// [`release_batch`](LockBackend::release_batch) call per backend value among them,
    /// on the threads that release orphaned leases, so the caller does not wait for the
    /// store. For a poller that gives up the locks it won but will not run, at shutdown,
    /// when the store may be slow or gone: dropping them would wait for each release in
    /// turn. A transient failure is released again in the background; others are logged.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_blocking::{Acquired, LeaderElector};
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions, TenantId};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let tenants = [TenantId::new("acme")?, TenantId::new("globex")?];
    /// let mut won = Vec::new();
    /// for answer in elector.try_acquire_for_tenants("sync", &tenants) {
    ///     won.extend(answer?);
    /// }
    /// Acquired::release_all(won);
    /// // Released on another thread: free soon after.
    /// let acme = elector.for_tenant("acme")?;
    /// let deadline = std::time::Instant::now() + Duration::from_secs(10);
    /// while acme.state("sync")?.leader().is_some() {
    ///     assert!(std::time::Instant::now() < deadline, "released in the background");
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release_all(acquired: Vec<Acquired<B>>) {
        HeldLease::release_all_in_background(acquired.into_iter().map(|a| a.held).collect());
    }

    /// Runs `action` under the lock as [`run`](Self::run) does, but leaves the release to
    /// the caller: the result, and the lock (no longer renewed) to release with others in
    /// one call by [`Finished::release_all`]. For a poller that finishes many jobs.
    ///
    /// # Errors
    ///
    /// [`Error::LeaseLost`] as [`run`](Self::run): the action does not run, and the lock
    /// is released at once.
    pub fn run_unreleased<T, E>(
        self,
        action: impl FnOnce(&LeaseContext) -> Result<T, E>,
    ) -> Result<(LeaderRunResult<T, E>, Finished<B>), Error> {
        let (result, held) = self
            .held
            .with_min_lease(self.min_lease_time)
            .run_action_unreleased(0, action)?;
        Ok((result, Finished { held }))
    }
}

/// A lock whose action has run ([`Acquired::run_unreleased`]) and that is not released yet.
///
/// It is no longer renewed. [`release_all`](Self::release_all) releases many in one
/// backend call, each keeping its minimum lease; one dropped on its own is released on its
/// own.
#[derive(Debug)]
#[must_use = "the lock is released when dropped"]
pub struct Finished<B: LockBackend + 'static> {
    held: HeldLease<B>,
}

impl<B: LockBackend + 'static> Finished<B> {
    /// The fencing token the action ran under.
    pub fn fencing_token(&self) -> u64 {
        self.held.lease().fencing_token
    }

    /// Releases all of `finished`, each keeping its minimum lease, in one
    /// [`release_batch`](LockBackend::release_batch) call per backend value among them. A
    /// failure is logged (the action's result is real); a transient one is released
    /// again in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::{Finished, LeaderElector};
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions, TenantId};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let tenants = [TenantId::new("acme")?, TenantId::new("globex")?];
    /// let mut finished = Vec::new();
    /// for answer in elector.try_acquire_for_tenants("sync", &tenants) {
    ///     if let Some(acquired) = answer? {
    ///         let (outcome, lock) = acquired.run_unreleased(|_| Ok::<_, std::io::Error>(()))?;
    ///         assert!(outcome.is_elected());
    ///         finished.push(lock);
    ///     }
    /// }
    /// Finished::release_all(finished);
    /// assert!(elector.for_tenant("acme")?.state("sync")?.leader().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release_all(finished: Vec<Finished<B>>) {
        HeldLease::release_all(finished.into_iter().map(|f| f.held).collect());
    }
}

impl<B: LockBackend + 'static> LeaderElector<B> {
    /// Tries the lock `name` of each of `tenants` once (`tenant:<id>:<name>`, as
    /// [`for_tenant`](Self::for_tenant) names it), all in one
    /// [`try_acquire_batch`](LockBackend::try_acquire_batch) call: one answer per tenant, in
    /// their order, `Some` when this node took the lock. `wait_time` does not apply.
    ///
    /// On Redis 1,000 tenants cost one round trip instead of 1,000. A tenant's own failure
    /// (a name too long with its prefix, a store error on its key) is its answer alone; a
    /// failed request's possible acquisition is released in the background, as after a
    /// failed `run_if_leader`.
    ///
    /// # Errors
    ///
    /// Per tenant: [`Error::InvalidName`] for a key too long with its prefix,
    /// [`Error::Backend`] for a store error on its key, and [`Error::LeaseLost`] when the
    /// batch was answered after the lease's deadline (`lease_time` from when it was sent:
    /// a paused process, a stalled server) — that lock is released in the background and
    /// nothing may run under it.
    ///
    /// On an elector that is scoped itself every answer is [`Error::AlreadyScoped`]
    /// (scopes do not nest).
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions, TenantId};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let tenants = [TenantId::new("acme")?, TenantId::new("globex")?];
    /// for answer in elector.try_acquire_for_tenants("sync", &tenants) {
    ///     if let Some(acquired) = answer? {
    ///         let tenant = acquired.tenant().clone();
    ///         let outcome = acquired.run(|lease| Ok::<_, std::io::Error>(lease.fencing_token()))?;
    ///         assert!(outcome.is_elected(), "{tenant}");
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_for_tenants(
        &self,
        name: &str,
        tenants: &[TenantId],
    ) -> Vec<Result<Option<Acquired<B>>, Error>> {
        let batch = match TenantBatch::new(self.settings(), self.backend().name(), name, tenants) {
            Ok(batch) => batch,
            Err(refused) => return refused.into_iter().map(Err).collect(),
        };
        let requests = batch.requests();
        let sent_at = Instant::now();
        let answers = self.backend().try_acquire_batch(requests.requests());
        let (answers, orphans) = requests.finish(answers, sent_at, Instant::now());
        for orphan in orphans {
            release_orphan(Arc::clone(self.backend()), orphan);
        }
        let acquired = |won: Won<'_>| Acquired {
            held: HeldLease::new(
                Arc::clone(self.backend()),
                won.lease,
                won.sent_at,
                name,
                0,
                won.keepalive,
            )
            .with_min_lease(Duration::ZERO),
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
