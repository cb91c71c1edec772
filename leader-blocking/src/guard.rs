//! The must-run lock guard: acquire or fail loudly, never skip.

use std::sync::Arc;

use leader_core::{Error, Hold, LeaseContext, LeaseMode, LockBackend, Reentered};

use crate::acquire::acquire;
use crate::elector::LeaderElector;
use crate::held::HeldLease;

/// A held lock for a critical section that must run or fail loudly (a billing run for one
/// period). Released when dropped.
///
/// With [`LeaseMode::Watchdog`] the backend's renewal driver renews it every `timeout / 3`
/// while the guard lives (see [`LeaderElector`]'s "Renewals"); with [`LeaseMode::Fixed`] it expires at its hard deadline and
/// [`is_lost`](Self::is_lost) turns true. Either way, check it (or the fencing token at
/// your storage) before each side effect.
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct LockGuard<B: LockBackend + 'static> {
    held: HeldLease<B>,
}

impl<B: LockBackend + 'static> LockGuard<B> {
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

    /// A nested hold of this lock for code the guard is handed to: the same lease and
    /// fencing token, no store call; it ends with nothing to release (see [`Hold`]).
    ///
    /// ```
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{Hold, InMemoryBackend, LeaderElectionOptions, LeaseMode};
    ///
    /// fn post_to_ledger(ledger: &impl Hold) -> u64 {
    ///     let nested = ledger.reenter();
    ///     nested.fencing_token() // pass it along with the write
    /// }
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let guard = elector.acquire("ledger", LeaseMode::watchdog())?;
    /// assert_eq!(post_to_ledger(&guard.reenter()), guard.fencing_token());
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn reenter(&self) -> Reentered<'_> {
        Hold::reenter(self)
    }

    /// The guard of a lease that may start (`HeldLease::check_start` passed).
    pub(crate) fn from_held(held: HeldLease<B>) -> Self {
        LockGuard { held }
    }

    /// The lease as acquired.
    pub(crate) fn lease(&self) -> &leader_core::Lease {
        self.held.lease()
    }

    /// Releases the lock now (dropping the guard does the same, logging any failure).
    ///
    /// # Errors
    ///
    /// A backend failure. A transient one (the store did not answer, or its answer was
    /// lost) is released again in the background until the store frees the lock or says
    /// it is gone, so the lock is not left taken until the lease runs out.
    pub fn release(self) -> Result<(), Error> {
        self.held.release().map(drop)
    }
}

impl<B: LockBackend + 'static> Hold for LockGuard<B> {
    fn context(&self) -> &LeaseContext {
        self.held.context()
    }
}

impl<B: LockBackend + 'static> LeaderElector<B> {
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
    /// use std::time::Duration;
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{Error, InMemoryBackend, LeaderElectionOptions, LeaseMode};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let guard = elector.acquire("bill-run:2026-11", LeaseMode::watchdog())?;
    /// assert_eq!(guard.fencing_token(), 1);
    ///
    /// // Another node fails loudly instead of skipping.
    /// let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    /// let other = LeaderElector::with_shared_backend(elector.backend().clone(), options)?;
    /// let other = other.acquire("bill-run:2026-11", LeaseMode::watchdog());
    /// assert!(matches!(other, Err(Error::NotAcquired { .. })));
    /// drop(guard); // released
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn acquire(&self, name: &str, mode: LeaseMode) -> Result<LockGuard<B>, Error> {
        let key = self.lock_key(name)?;
        let (options, keepalive) = mode.apply(self.options())?;
        let (lease, sent_at) = acquire(self.backend(), &options, &key)?.acquired_or_not(&key)?;
        let held = HeldLease::new(
            Arc::clone(self.backend()),
            lease,
            sent_at,
            name,
            0,
            keepalive,
        );
        Ok(LockGuard::from_held(held.check_start()?))
    }

    /// Runs `section` while holding `name` (see [`acquire`](Self::acquire)), then releases.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire): the section does not run unless the lock is held.
    pub fn with_lock<T>(
        &self,
        name: &str,
        mode: LeaseMode,
        section: impl FnOnce(&LockGuard<B>) -> T,
    ) -> Result<T, Error> {
        let guard = self.acquire(name, mode)?;
        let value = section(&guard);
        if let Err(err) = guard.release() {
            tracing::warn!(lock = %name, error = %err, "release after the section failed");
        }
        Ok(value)
    }
}
