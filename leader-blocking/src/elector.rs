//! [`LeaderElector`]: run an action on the calling thread, only if elected.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;

use leader_core::__private::{Keepalive, Observation, Scope, Step};
use leader_core::{
    Error, ForceReleaseOutcome, GroupSlots, LeaderRunResult, LeaderState, LeaseContext, ListPage,
    ListRequest, LockBackend,
};

use crate::acquire::{acquire, acquire_slot};
use crate::held::HeldLease;
use crate::observe::Observer;

/// Runs actions only on the node that wins the lock; the others skip.
///
/// The action runs on the calling thread. While it runs the lease is renewed if
/// `auto_extend` is set, every `lease_time / 3`; when it returns, fails or panics, the
/// lease is released (a panic then continues). Cloning is cheap and clones share the
/// backend.
///
/// **Renewals.** Every auto-extended lease over one backend value (the same `Arc`, so all
/// clones and every elector made [`with_shared_backend`](Self::with_shared_backend) from
/// it) is renewed by one driver, however many leases are held: a scheduler thread that
/// never waits for the backend, and a few threads for the calls (one while calls are
/// answered promptly, another whenever the waiting call has waited 50 ms, at most 16).
/// Due leases are renewed together with [`LockBackend::extend_batch`] when the backend's
/// batch is native (on Redis, 10,000 leases in one round trip), and one call per lease
/// otherwise, so one stuck key holds up no other lease; each lease is marked lost at its
/// own deadline if its renewal goes unanswered, whatever the other calls are doing. Give
/// electors one backend value rather than a backend each, so that they share it.
///
/// # Errors
///
/// Every method fails closed: backend trouble is an [`Error::Backend`], never a skip.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_blocking::LeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaderRunResult};
///
/// let backend = InMemoryBackend::new();
/// let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
/// let elector = LeaderElector::new(backend, options)?;
///
/// let outcome = elector.run_if_leader_result("billing", || Ok::<_, std::io::Error>("done"))?;
/// assert!(matches!(outcome, LeaderRunResult::Elected { value: "done", .. }));
/// # Ok::<(), leader_core::Error>(())
/// ```
pub struct LeaderElector<B> {
    scope: Scope<B>,
}

impl<B> Clone for LeaderElector<B> {
    fn clone(&self) -> Self {
        Self::from_scope(self.scope.clone())
    }
}

impl<B> LeaderElector<B> {
    /// The elector over `scope`.
    pub(crate) fn from_scope(scope: Scope<B>) -> Self {
        LeaderElector { scope }
    }

    /// Its backend, options and name scope.
    pub(crate) fn scope(&self) -> &Scope<B> {
        &self.scope
    }
}

impl<B: fmt::Debug> fmt::Debug for LeaderElector<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.scope.debug_as("LeaderElector", f)
    }
}

impl<B: LockBackend + 'static> LeaderElector<B> {
    leader_core::elector_scope_methods!(LeaderElector, leader_blocking);

    /// Runs `action` if this node wins the lock `name`; `Ok(None)` if another node holds it
    /// for the whole `wait_time`.
    ///
    /// # Fencing
    ///
    /// This form keeps the simple case simple and so does not hand out the fencing token.
    /// When the action writes to storage that a paused, stale leader could also write to,
    /// use [`run_if_leader_with`](Self::run_if_leader_with): the action gets the lease's
    /// [`LeaseContext`] (its token, and whether it is still held), and the result carries
    /// the token too:
    ///
    /// ```
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// // The token rides along with the value, for writes that storage fences:
    /// let outcome = elector.run_if_leader_with("billing", |lease| {
    ///     Ok::<_, std::io::Error>(format!("write fenced by {}", lease.fencing_token()))
    /// })?;
    /// assert_eq!(outcome.fencing_token(), Some(1));
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// An invalid name, a backend failure, or [`Error::LeaseLost`] when every acquisition
    /// within `wait_time` was answered after its lease's deadline (a paused process, a
    /// stalled server: each such lease is released in the background). The action then
    /// does not run.
    ///
    /// # Panics
    ///
    /// If `action` panics, the lease is released and the panic continues.
    pub fn run_if_leader<T>(
        &self,
        name: &str,
        action: impl FnOnce() -> T,
    ) -> Result<Option<T>, Error> {
        self.run_plain(None, name, action)
    }

    /// Runs a fallible `action` if this node wins the lock; its error comes back as
    /// [`LeaderRunResult::ActionFailed`].
    ///
    /// # Errors
    ///
    /// An invalid name, a backend failure, or [`Error::LeaseLost`] when every acquisition
    /// within `wait_time` was answered after its lease's deadline (a paused process, a
    /// stalled server: each such lease is released in the background). The action then
    /// does not run.
    pub fn run_if_leader_result<T, E>(
        &self,
        name: &str,
        action: impl FnOnce() -> Result<T, E>,
    ) -> Result<LeaderRunResult<T, E>, Error> {
        self.run_on(None, name, |_| action())
    }

    /// Like [`run_if_leader_result`](Self::run_if_leader_result), and the action sees its
    /// [`LeaseContext`]: the fencing token to pass along with writes, the deadline, and
    /// whether the lease was lost.
    ///
    /// # Errors
    ///
    /// An invalid name, a backend failure, or [`Error::LeaseLost`] when every acquisition
    /// within `wait_time` was answered after its lease's deadline (a paused process, a
    /// stalled server: each such lease is released in the background). The action then
    /// does not run.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let outcome = elector.run_if_leader_with("compaction", |lease| {
    ///     lease.check()?; // still ours? stop early if not
    ///     Ok::<_, leader_core::Error>(lease.fencing_token())
    /// })?;
    /// assert_eq!(outcome.into_value(), Some(1));
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn run_if_leader_with<T, E>(
        &self,
        name: &str,
        action: impl FnOnce(&LeaseContext) -> Result<T, E>,
    ) -> Result<LeaderRunResult<T, E>, Error> {
        self.run_on(None, name, action)
    }

    /// Runs a plain `action` as [`run_if_leader`](Self::run_if_leader) does, on the lock
    /// `name` (`slots` `None`) or on a slot of the group `name`.
    pub(crate) fn run_plain<T>(
        &self,
        slots: Option<GroupSlots>,
        name: &str,
        action: impl FnOnce() -> T,
    ) -> Result<Option<T>, Error> {
        let outcome = self.run_on(slots, name, |_| Ok::<T, Infallible>(action()))?;
        Ok(outcome.into_value())
    }

    /// Runs `action` if this node wins the lock `name` (`slots` `None`) or a slot of the
    /// group `name`, then releases it; [`Error::LeaseLost`] if the lease was lost before
    /// the action could start.
    pub(crate) fn run_on<T, E>(
        &self,
        slots: Option<GroupSlots>,
        name: &str,
        action: impl FnOnce(&LeaseContext) -> Result<T, E>,
    ) -> Result<LeaderRunResult<T, E>, Error> {
        let key = self.lock_key(name)?;
        let (step, slot) = match slots {
            None => (acquire(self.backend(), self.options(), &key)?, 0),
            Some(slots) => acquire_slot(self.backend(), self.options(), &slots.keys(&key)?)?,
        };
        let Step::Acquired(lease, sent_at) = step else {
            return Ok(LeaderRunResult::Skipped);
        };
        HeldLease::new(
            Arc::clone(self.backend()),
            lease,
            sent_at,
            name,
            slot,
            Keepalive::from_options(self.options()),
        )
        .run_action(slot, action)
    }

    /// A best-effort snapshot of who leads `name` (see [`LeaderState`]).
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    pub fn state(&self, name: &str) -> Result<LeaderState, Error> {
        let key = self.observed_key(name)?;
        Ok(self.backend().state(&key)?.with_lock_name(name))
    }

    /// The changes of who holds `name`, as an iterator that blocks until the next one:
    /// first the lock as it is, then each new holder, release and expiry, pushed where the
    /// backend notifies releases and polled (every second by default) elsewhere. See
    /// [`Observer`] for what is seen when, and the policy for a slow reader.
    ///
    /// `name` is one that [`observed_key`](Self::observed_key) takes: a lock, a group's
    /// slot, a ranked candidate's record.
    ///
    /// # Errors
    ///
    /// An invalid name. Read failures come as the iterator's `Err` items.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{ChangeKind, InMemoryBackend, LeaderElectionOptions, Shutdown};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let shutdown = Shutdown::new();
    /// let changes = elector
    ///     .observe("nightly")?
    ///     .with_poll_interval(Duration::from_millis(200))
    ///     .until(&shutdown);
    /// let watcher = std::thread::spawn(move || {
    ///     changes
    ///         .filter_map(Result::ok)
    ///         .map(|change| change.to_string())
    ///         .collect::<Vec<_>>()
    /// });
    /// # std::thread::sleep(Duration::from_millis(50));
    /// shutdown.trigger(); // ends the iterator
    /// assert_eq!(watcher.join().unwrap()[0], "nightly free");
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn observe(&self, name: &str) -> Result<Observer<B>, Error> {
        let observed = Observation::lock(self.observed_key(name)?, name);
        Ok(Observer::new(Arc::clone(self.backend()), observed))
    }

    /// One page of the locks held under `request.prefix` (inside this elector's tenant
    /// scope, names reported without it), best-effort like [`state`](Self::state): see
    /// [`ListPage`]. Pass the page's `next` cursor back with [`ListRequest::after`].
    ///
    /// # Errors
    ///
    /// A backend failure, or a cursor the backend did not make.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions, ListRequest};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let acme = elector.for_tenant("acme")?;
    /// let held = acme.acquire("sync", leader_core::LeaseMode::watchdog())?;
    /// let page = acme.list(ListRequest::new(""))?;
    /// assert_eq!(page.locks[0].lock_name(), "sync");
    /// // The unscoped elector sees the full key.
    /// let page = elector.list(ListRequest::new("tenant:"))?;
    /// assert_eq!(page.locks[0].lock_name(), "tenant:acme:sync");
    /// # drop(held);
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn list(&self, request: ListRequest) -> Result<ListPage, Error> {
        let page = self.backend().list(&self.scope.scoped_list(request))?;
        Ok(self.scope.unscoped_page(page))
    }

    /// Frees the lock `name` whoever holds it, and returns the holder it removed: an
    /// operator's action for a stuck holder. The holder finds out at its next renewal
    /// (its lease is lost); its fencing token stays spent, so a late write of its is
    /// still refused by a fenced resource.
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    pub fn force_release(&self, name: &str) -> Result<ForceReleaseOutcome, Error> {
        let key = self.observed_key(name)?;
        self.backend().force_release(&key)
    }

    /// Frees the lock `name` only if its holder is still the acquisition with
    /// `fencing_token` (the one a [`state`](Self::state) showed): the operator's release
    /// of the holder they looked at. The backend checks and frees in one atomic step, so a
    /// holder that took over since the look is never freed: it comes back as
    /// [`ForceReleaseOutcome::HolderChanged`] (a free lock as `NotHeld`), nothing changed.
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{ForceReleaseOutcome, InMemoryBackend, LeaderElectionOptions, LeaseMode};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let first = elector.acquire("nightly", LeaseMode::watchdog())?;
    /// let seen = elector.state("nightly")?.leader().map(|holder| holder.fencing_token);
    /// // Meanwhile the holder leaves and another acquisition takes the lock.
    /// first.release()?;
    /// let second = elector.acquire("nightly", LeaseMode::watchdog())?;
    /// let outcome = elector.force_release_if("nightly", seen.unwrap_or_default())?;
    /// assert!(matches!(outcome, ForceReleaseOutcome::HolderChanged(now) if now.fencing_token == second.fencing_token()));
    /// assert!(!second.is_lost());
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn force_release_if(
        &self,
        name: &str,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        let key = self.observed_key(name)?;
        self.backend().force_release_if(&key, fencing_token)
    }
}
