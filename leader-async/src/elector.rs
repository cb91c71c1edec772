//! [`AsyncLeaderElector`]: `run_if_leader(...).await`.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use leader_core::__private::{Keepalive, Observation, Scope, Step};
use leader_core::{
    AsyncLockBackend, Error, ForceReleaseOutcome, GroupSlots, LeaderRunResult, LeaderState, Lease,
    LeaseContext, ListPage, ListRequest,
};

use crate::acquire::{acquire, acquire_slot};
use crate::held::AsyncHeldLease;
use crate::observe::AsyncObserver;

/// Runs async actions only on the node that wins the lock; the others skip.
///
/// Cheap to clone, `Send + Sync`: keep one in your service's state. With `auto_extend`
/// the lease is renewed every `lease_time / 3` concurrently with the action (in the same
/// task); the action can watch [`LeaseContext::lost`]. When the action returns, fails or
/// panics, the lease is released (a panic then continues); when the future is dropped
/// mid-action, the release is spawned on the runtime (see the crate's `# Cancel safety`).
///
/// # Errors
///
/// Every method fails closed: backend trouble is an [`Error::Backend`], never a skip.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_async::AsyncLeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaderRunResult};
///
/// # smol::block_on(async {
/// let options = LeaderElectionOptions::default().with_auto_extend(true);
/// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), options)?;
/// let outcome = elector
///     .run_if_leader_with("stream-compaction", |lease| async move {
///         // Pass the fencing token with every write; stop if the lease is lost.
///         lease.check()?;
///         Ok::<_, leader_core::Error>(lease.fencing_token())
///     })
///     .await?;
/// assert!(matches!(outcome, LeaderRunResult::Elected { value: 1, .. }));
/// # Ok::<(), leader_core::Error>(())
/// # }).unwrap();
/// ```
pub struct AsyncLeaderElector<B> {
    scope: Scope<B>,
}

impl<B> Clone for AsyncLeaderElector<B> {
    fn clone(&self) -> Self {
        Self::from_scope(self.scope.clone())
    }
}

impl<B> AsyncLeaderElector<B> {
    /// The elector over `scope`.
    pub(crate) fn from_scope(scope: Scope<B>) -> Self {
        AsyncLeaderElector { scope }
    }

    /// Its backend, options and name scope.
    pub(crate) fn scope(&self) -> &Scope<B> {
        &self.scope
    }
}

impl<B: fmt::Debug> fmt::Debug for AsyncLeaderElector<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.scope.debug_as("AsyncLeaderElector", f)
    }
}

impl<B: AsyncLockBackend + 'static> AsyncLeaderElector<B> {
    leader_core::elector_scope_methods!(AsyncLeaderElector, leader_async);

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
    /// use leader_async::AsyncLeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), leader_core::Error> {
    /// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// // The token rides along with the value, for writes that storage fences:
    /// let outcome = elector
    ///     .run_if_leader_with("billing", |lease| async move {
    ///         Ok::<_, std::io::Error>(format!("write fenced by {}", lease.fencing_token()))
    ///     })
    ///     .await?;
    /// assert_eq!(outcome.fencing_token(), Some(1));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// An invalid name, a backend failure, or [`Error::LeaseLost`] when every acquisition
    /// within `wait_time` was answered after its lease's deadline (a paused process, a
    /// stalled server: each such lease is released in the background). The action then
    /// does not run.
    pub async fn run_if_leader<T, F, Fut>(&self, name: &str, action: F) -> Result<Option<T>, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        self.run_plain(None, name, action).await
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
    pub async fn run_if_leader_result<T, E, F, Fut>(
        &self,
        name: &str,
        action: F,
    ) -> Result<LeaderRunResult<T, E>, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_on(None, name, |_| action()).await
    }

    /// Like [`run_if_leader_result`](Self::run_if_leader_result), and the action gets its
    /// [`LeaseContext`] (fencing token, deadline, a lost signal it can poll or await).
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
    /// If the action panics, the lease is released and the panic continues.
    pub async fn run_if_leader_with<T, E, F, Fut>(
        &self,
        name: &str,
        action: F,
    ) -> Result<LeaderRunResult<T, E>, Error>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_on(None, name, action).await
    }

    /// Runs a plain `action` as [`run_if_leader`](Self::run_if_leader) does, on the lock
    /// `name` (`slots` `None`) or on a slot of the group `name`.
    pub(crate) async fn run_plain<T, F, Fut>(
        &self,
        slots: Option<GroupSlots>,
        name: &str,
        action: F,
    ) -> Result<Option<T>, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let outcome = self
            .run_on(slots, name, |_| async move {
                Ok::<T, Infallible>(action().await)
            })
            .await?;
        Ok(outcome.into_value())
    }

    /// Runs `action` if this node wins the lock `name` (`slots` `None`) or a slot of the
    /// group `name`.
    pub(crate) async fn run_on<T, E, F, Fut>(
        &self,
        slots: Option<GroupSlots>,
        name: &str,
        action: F,
    ) -> Result<LeaderRunResult<T, E>, Error>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let key = self.lock_key(name)?;
        // The plain lock's acquire awaited on a path of its own, not in one `match` with the
        // group's: a future holding room for either state was measurably slower on every
        // plain run (the in-memory bench, `--bench memory`).
        let Some(slots) = slots else {
            let Step::Acquired(lease, sent_at) =
                acquire(self.backend(), self.options(), &key).await?
            else {
                return Ok(LeaderRunResult::Skipped);
            };
            return self.run_held(name, lease, sent_at, 0, action).await;
        };
        let (step, slot) = acquire_slot(self.backend(), self.options(), &slots.keys(&key)?).await?;
        let Step::Acquired(lease, sent_at) = step else {
            return Ok(LeaderRunResult::Skipped);
        };
        self.run_held(name, lease, sent_at, slot, action).await
    }

    /// Runs `action` under an acquired lease, then releases it ([`Error::LeaseLost`] if
    /// the lease was lost before the action could start). A plain function handing back
    /// the run's future, not an `async fn` around it: one layer fewer where runs nest.
    fn run_held<T, E, F, Fut>(
        &self,
        name: &str,
        lease: Lease,
        sent_at: Instant,
        slot: u32,
        action: F,
    ) -> impl Future<Output = Result<LeaderRunResult<T, E>, Error>>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        AsyncHeldLease::new(
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
    pub async fn state(&self, name: &str) -> Result<LeaderState, Error> {
        let key = self.observed_key(name)?;
        Ok(self.backend().state(&key).await?.with_lock_name(name))
    }

    /// The changes of who holds `name`: first the lock as it is, then each new holder,
    /// release and expiry, pushed where the backend notifies releases and polled (every
    /// second by default) elsewhere. See [`AsyncObserver`] for what is seen when, and the
    /// policy for a slow reader.
    ///
    /// `name` is one that [`observed_key`](Self::observed_key) takes: a lock, a group's
    /// slot, a ranked candidate's record.
    ///
    /// # Errors
    ///
    /// An invalid name. Read failures come as the observer's `Err` items.
    pub fn observe(&self, name: &str) -> Result<AsyncObserver<B>, Error> {
        let observed = Observation::lock(self.observed_key(name)?, name);
        Ok(AsyncObserver::new(Arc::clone(self.backend()), observed))
    }

    /// One page of the locks held under `request.prefix` (inside this elector's tenant
    /// scope, names reported without it), best-effort like [`state`](Self::state): see
    /// [`ListPage`]. Pass the page's `next` cursor back with [`ListRequest::after`].
    ///
    /// # Errors
    ///
    /// A backend failure, or a cursor the backend did not make.
    pub async fn list(&self, request: ListRequest) -> Result<ListPage, Error> {
        let page = self
            .backend()
            .list(&self.scope.scoped_list(request))
            .await?;
        Ok(self.scope.unscoped_page(page))
    }

    /// Frees the lock `name` whoever holds it, and returns the holder it removed: an
    /// operator's action for a stuck holder. The holder finds out at its next renewal
    /// (its lease is lost); its fencing token stays spent.
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    pub async fn force_release(&self, name: &str) -> Result<ForceReleaseOutcome, Error> {
        let key = self.observed_key(name)?;
        self.backend().force_release(&key).await
    }

    /// Frees the lock `name` only if its holder is still the acquisition with
    /// `fencing_token` (the one a [`state`](Self::state) showed), checked and freed by the
    /// backend in one atomic step; a holder that took over since is returned as
    /// [`ForceReleaseOutcome::HolderChanged`] and kept (a free lock is `NotHeld`).
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_async::AsyncLeaderElector;
    /// use leader_core::{ForceReleaseOutcome, InMemoryBackend, LeaderElectionOptions, LeaseMode};
    ///
    /// # smol::block_on(async {
    /// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let held = elector.acquire("nightly", LeaseMode::watchdog()).await?;
    /// let stale = held.fencing_token() + 1;
    /// let kept = elector.force_release_if("nightly", stale).await?;
    /// assert!(matches!(kept, ForceReleaseOutcome::HolderChanged(_)));
    /// let freed = elector.force_release_if("nightly", held.fencing_token()).await?;
    /// assert!(matches!(freed, ForceReleaseOutcome::Released(_)));
    /// # Ok::<(), leader_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn force_release_if(
        &self,
        name: &str,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        let key = self.observed_key(name)?;
        self.backend().force_release_if(&key, fencing_token).await
    }
}
