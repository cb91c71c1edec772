//! The must-run lock guard, async: acquire or fail loudly, never skip.

use std::sync::Arc;

use leader_core::{AsyncLockBackend, Error, Hold, LeaderLease, LeaseContext, LeaseMode, Reentered};

use crate::acquire::acquire;
use crate::elector::AsyncLeaderElector;
use crate::held::AsyncHeldLease;
use crate::stop::StopSignal;

/// A held lock for a critical section that must run or fail loudly. Released when
/// dropped (through a task spawned on the runtime) or by [`release`](Self::release).
///
/// With [`LeaseMode::Watchdog`] a background task renews it every `timeout / 3` while the
/// guard lives; with [`LeaseMode::Fixed`] it runs out at its hard deadline. Either way the
/// guard's [`context`](Self::context) reports the loss (`is_lost()`, `lost().await`).
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct AsyncLockGuard<B: AsyncLockBackend + 'static> {
    held: Option<AsyncHeldLease<B>>,
    context: LeaseContext,
    watchdog: StopSignal,
}

impl<B: AsyncLockBackend + 'static> AsyncLockGuard<B> {
    /// The fencing token of this acquisition.
    pub fn fencing_token(&self) -> u64 {
        self.context.fencing_token()
    }

    /// The lease's context: deadline, lost flag, lost signal.
    pub fn context(&self) -> &LeaseContext {
        &self.context
    }

    /// `true` once the lease was lost or ran out.
    pub fn is_lost(&self) -> bool {
        self.context.is_lost()
    }

    /// A nested hold of this lock for code the guard is handed to: the same lease and
    /// fencing token, no store call; it ends with nothing to release (see [`Hold`]).
    pub fn reenter(&self) -> Reentered<'_> {
        Hold::reenter(self)
    }

    /// The guard of a lease just acquired: checked that it may start, then renewed by a
    /// watchdog task while the guard lives.
    pub(crate) fn start(held: AsyncHeldLease<B>) -> Result<Self, Error> {
        let held = held.check_start()?;
        let watchdog = StopSignal::default();
        held.spawn_watchdog(watchdog.clone().stopped());
        Ok(AsyncLockGuard {
            context: held.context().clone(),
            held: Some(held),
            watchdog,
        })
    }

    /// The holder as acquired (`None` once released).
    pub(crate) fn holder(&self) -> Option<LeaderLease> {
        self.held.as_ref().map(|held| {
            let lease = held.lease();
            LeaderLease::new(
                lease.leader_id.clone(),
                lease.acquired_at,
                lease.expires_at,
                lease.fencing_token,
            )
        })
    }

    /// Stops renewing and releases the lock now.
    pub async fn release(mut self) {
        self.watchdog.stop();
        if let Some(held) = self.held.take() {
            held.release().await;
        }
    }
}

impl<B: AsyncLockBackend + 'static> Hold for AsyncLockGuard<B> {
    fn context(&self) -> &LeaseContext {
        &self.context
    }
}

impl<B: AsyncLockBackend + 'static> Drop for AsyncLockGuard<B> {
    fn drop(&mut self) {
        self.watchdog.stop();
    }
}

impl<B: AsyncLockBackend + 'static> AsyncLeaderElector<B> {
    /// Acquires `name` for a critical section that must run: waits up to `wait_time`, then
    /// fails closed.
    ///
    /// # Errors
    ///
    /// - [`Error::NotAcquired`] with the lock key and the holder, if it stayed held;
    /// - [`Error::Backend`] if the backend failed — the section must not run;
    /// - [`Error::LeaseLost`] if every acquisition within `wait_time` was answered after
    ///   its lease's deadline (a paused process, a stalled server): each such lease is
    ///   released in the background, and no guard is handed out;
    /// - [`Error::InvalidName`] / [`Error::InvalidOptions`] for bad input.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_async::AsyncLeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseMode};
    ///
    /// # smol::block_on(async {
    /// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let total = elector
    ///     .with_lock("bill-run:2026-11", LeaseMode::watchdog(), |lease| async move {
    ///         assert!(!lease.is_lost());
    ///         42
    ///     })
    ///     .await?;
    /// assert_eq!(total, 42);
    /// # Ok::<(), leader_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn acquire(&self, name: &str, mode: LeaseMode) -> Result<AsyncLockGuard<B>, Error> {
        let key = self.lock_key(name)?;
        let (options, keepalive) = mode.apply(self.options())?;
        let step = acquire(self.backend(), &options, &key).await?;
        let (lease, sent_at) = step.acquired_or_not(&key)?;
        let held = AsyncHeldLease::new(
            Arc::clone(self.backend()),
            lease,
            sent_at,
            name,
            0,
            keepalive,
        );
        AsyncLockGuard::start(held)
    }

    /// Runs `section` while holding `name` (see [`acquire`](Self::acquire)), then releases.
    /// The section gets the lease's context (fencing token, lost signal).
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire): the section does not run unless the lock is held.
    pub async fn with_lock<T, F, Fut>(
        &self,
        name: &str,
        mode: LeaseMode,
        section: F,
    ) -> Result<T, Error>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let guard = self.acquire(name, mode).await?;
        let value = section(guard.context().clone()).await;
        guard.release().await;
        Ok(value)
    }
}
