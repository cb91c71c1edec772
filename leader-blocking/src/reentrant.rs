//! Reentrant locks: holds counted by a key the caller chooses (see [`ReentrantLocks`]).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_core::__private::{DEFAULT_REENTRANCY_LIMIT, Enter, Holds, Leave};
use leader_core::{Error, Hold, LeaderLease, LeaseContext, LeaseMode, LockBackend, LockName};
use parking_lot::{Condvar, Mutex};

use crate::elector::LeaderElector;
use crate::guard::LockGuard;

/// Locks that the same *holder* can take again while it holds them: code that holds a
/// lock calls code that takes the same lock, and neither waits on itself nor releases the
/// outer hold when the inner one ends.
///
/// Holds are counted per lock and per holder key, a string the caller chooses and its
/// nested code shares: a request id, a job id. Not per thread: the nested calls of one
/// request may run on other threads (and in async code, tasks move between threads). So:
///
/// - the first [`acquire`](Self::acquire) of a holder takes the lock from the store like
///   [`LeaderElector::acquire`]; the same holder again gets a nested hold of the same
///   lease: the same fencing token, no store call, and the lease as it is (a nested
///   hold's `mode` is not applied: it never shortens or lengthens the lease);
/// - another holder in this process waits (up to `wait_time`) until the lock is released
///   here, then takes it from the store like any node: in-process contention never costs
///   a store call while the lock is held here;
/// - holds end in any order (dropping a guard ends its hold); the lock is released when
///   the last one ends;
/// - a lease that is over (lost, or past its deadline) takes no new hold: the holder
///   gets [`Error::LeaseLost`], and ends the holds it has;
/// - nesting deeper than the limit ([`DEFAULT_LIMIT`](Self::DEFAULT_LIMIT), or
///   [`with_limit`](Self::with_limit)) fails with [`Error::ReentrancyLimit`] and leaves the
///   holds as they were.
///
/// The holds are kept by this value and its clones: make it once (from the elector) and
/// share it. Other processes see one holder, this node, as with any lock.
///
/// Where the outer hold can be handed to the nested code, pass it instead
/// (`&impl Hold`, then [`Hold::reenter`]): that needs no key and no table.
///
/// **Compared with Redisson and Hazelcast.** Redisson's `RLock` counts holds per
/// `uuid:threadId`, so a hold taken on one thread cannot be ended on another (async code
/// gets "attempt to unlock lock, not locked by current thread"), and a re-entry with a
/// shorter lease shortens the whole lock. Here the count is per holder key, and a nested
/// hold never changes the lease. Hazelcast's `FencedLock` is reentrant per thread with a
/// configurable limit, as here; its fencing token stays the same across re-entries, as
/// here.
///
/// # Examples
///
/// ```
/// use leader_blocking::{LeaderElector, ReentrantLocks};
/// use leader_core::{Hold, InMemoryBackend, LeaderElectionOptions, LeaseMode};
///
/// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let locks = ReentrantLocks::new(&elector);
///
/// let outer = locks.acquire("ledger", "request-42", LeaseMode::watchdog())?;
/// // Nested code of the same request takes the lock again: no wait, the same token.
/// let inner = locks.acquire("ledger", "request-42", LeaseMode::watchdog())?;
/// assert_eq!(inner.fencing_token(), outer.fencing_token());
/// assert_eq!(inner.holds(), 2);
/// drop(inner); // the lock stays held
/// assert_eq!(outer.holds(), 1);
/// outer.release()?; // the last hold: released
/// # Ok::<(), leader_core::Error>(())
/// ```
pub struct ReentrantLocks<B: LockBackend + 'static> {
    elector: LeaderElector<B>,
    table: Arc<Table<B>>,
}

/// The holds, and the waiters for their release.
struct Table<B: LockBackend + 'static> {
    holds: Mutex<Holds<Arc<Shared<B>>>>,
    changed: Condvar,
}

/// One lease, shared by its holder's holds.
struct Shared<B: LockBackend + 'static> {
    context: LeaseContext,
    /// The holder as acquired, to name when another holder's wait runs out.
    holder: LeaderLease,
    /// The guard of the lease: released with the last hold.
    guard: Mutex<Option<LockGuard<B>>>,
}

impl<B: LockBackend + 'static> Clone for ReentrantLocks<B> {
    fn clone(&self) -> Self {
        ReentrantLocks {
            elector: self.elector.clone(),
            table: Arc::clone(&self.table),
        }
    }
}

impl<B: LockBackend + 'static> fmt::Debug for ReentrantLocks<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReentrantLocks")
            .field("limit", &self.table.holds.lock().limit())
            .finish_non_exhaustive()
    }
}

impl<B: LockBackend + 'static> ReentrantLocks<B> {
    /// The nesting limit unless [`with_limit`](Self::with_limit) says otherwise: deeper
    /// nesting is taken for runaway recursion.
    pub const DEFAULT_LIMIT: u32 = DEFAULT_REENTRANCY_LIMIT;

    /// Reentrant locks taken through `elector` (its backend, options and name scope).
    pub fn new(elector: &LeaderElector<B>) -> Self {
        ReentrantLocks {
            elector: elector.clone(),
            table: Arc::new(Table {
                holds: Mutex::new(Holds::new(Self::DEFAULT_LIMIT)),
                changed: Condvar::new(),
            }),
        }
    }

    /// The same, allowing `limit` holds per lock and holder (1: not reentrant at all;
    /// 0 is taken as 1). Holds taken before are forgotten: call it first.
    #[must_use]
    pub fn with_limit(self, limit: u32) -> Self {
        ReentrantLocks {
            elector: self.elector,
            table: Arc::new(Table {
                holds: Mutex::new(Holds::new(limit)),
                changed: Condvar::new(),
            }),
        }
    }

    /// Takes `name` for `holder`: a nested hold if `holder` holds it here already, else
    /// from the store (waiting up to `wait_time`, first for another holder here to release
    /// it, then as [`LeaderElector::acquire`] does). `mode` applies to the first hold only.
    ///
    /// # Errors
    ///
    /// As [`LeaderElector::acquire`] ([`Error::NotAcquired`] also when another holder in
    /// this process kept the lock for the whole wait), [`Error::ReentrancyLimit`] when
    /// `holder` holds it as many times as the limit allows, and [`Error::LeaseLost`] when
    /// `holder` holds it on a lease that is over.
    pub fn acquire(
        &self,
        name: &str,
        holder: &str,
        mode: LeaseMode,
    ) -> Result<ReentrantGuard<B>, Error> {
        let key = self.elector.lock_key(name)?;
        let (options, _) = mode.apply(self.elector.options())?;
        let deadline = Instant::now().checked_add(options.wait_time());
        let mut holds = self.table.holds.lock();
        loop {
            match holds.enter(&key, holder, |shared| shared.context.is_lost())? {
                Enter::Nested { hold, .. } => return Ok(self.guard(hold, key)),
                Enter::Acquire => break,
                Enter::Wait => {
                    let timed_out = match deadline {
                        Some(deadline) => self.table.changed.wait_until(&mut holds, deadline),
                        None => {
                            self.table.changed.wait(&mut holds);
                            continue;
                        }
                    }
                    .timed_out();
                    if timed_out {
                        return Err(not_acquired(&key, holds.held(&key)));
                    }
                }
            }
        }
        drop(holds);
        let left = deadline.map_or(options.wait_time(), |deadline| {
            deadline.saturating_duration_since(Instant::now())
        });
        let acquired = self.acquire_from_store(name, mode, left);
        let mut holds = self.table.holds.lock();
        let result = match acquired {
            Ok(guard) => {
                let lease = guard.lease();
                let shared = Arc::new(Shared {
                    context: guard.context().clone(),
                    holder: LeaderLease::new(
                        lease.leader_id.clone(),
                        lease.acquired_at,
                        lease.expires_at,
                        lease.fencing_token,
                    ),
                    guard: Mutex::new(Some(guard)),
                });
                holds.acquired(&key, holder, Some(Arc::clone(&shared)));
                Ok(self.guard(shared, key))
            }
            Err(err) => {
                holds.acquired(&key, holder, None);
                Err(err)
            }
        };
        drop(holds);
        self.table.changed.notify_all();
        result
    }

    /// How many holds `name` has in this process (0: not held here).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for a bad name.
    pub fn holds(&self, name: &str) -> Result<u32, Error> {
        let key = self.elector.lock_key(name)?;
        Ok(self.table.holds.lock().holds(&key))
    }

    fn acquire_from_store(
        &self,
        name: &str,
        mode: LeaseMode,
        wait: Duration,
    ) -> Result<LockGuard<B>, Error> {
        let options = self.elector.options().clone().with_wait_time(wait);
        self.elector.with_options(options)?.acquire(name, mode)
    }

    fn guard(&self, shared: Arc<Shared<B>>, key: LockName) -> ReentrantGuard<B> {
        ReentrantGuard {
            shared,
            table: Arc::clone(&self.table),
            key,
            ended: false,
        }
    }
}

/// [`Error::NotAcquired`] for a lock another holder here kept for the whole wait.
fn not_acquired<B: LockBackend + 'static>(key: &LockName, held: Option<&Arc<Shared<B>>>) -> Error {
    Error::NotAcquired {
        key: key.as_str().to_owned(),
        holder: held.map(|shared| Box::new(shared.holder.clone())),
    }
}

/// One hold of a reentrant lock (see [`ReentrantLocks`]). Ends when dropped or
/// [`release`](Self::release)d; the lock is released when its holder's last hold ends.
#[must_use = "the hold ends when the guard is dropped"]
pub struct ReentrantGuard<B: LockBackend + 'static> {
    shared: Arc<Shared<B>>,
    table: Arc<Table<B>>,
    key: LockName,
    ended: bool,
}

impl<B: LockBackend + 'static> fmt::Debug for ReentrantGuard<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReentrantGuard")
            .field("key", &self.key)
            .field("fencing_token", &self.shared.context.fencing_token())
            .finish_non_exhaustive()
    }
}

impl<B: LockBackend + 'static> ReentrantGuard<B> {
    /// The fencing token of the lease: the same for every hold of one acquisition.
    pub fn fencing_token(&self) -> u64 {
        self.shared.context.fencing_token()
    }

    /// The lease's context: deadline, lost flag, lost signal.
    pub fn context(&self) -> &LeaseContext {
        &self.shared.context
    }

    /// `true` once the lease was lost or ran out (for every hold of it).
    pub fn is_lost(&self) -> bool {
        self.shared.context.is_lost()
    }

    /// How many holds the lock has now (this one included).
    pub fn holds(&self) -> u32 {
        self.table.holds.lock().holds(&self.key)
    }

    /// Ends this hold now (dropping the guard does the same, logging any failure); the
    /// last hold releases the lock.
    ///
    /// # Errors
    ///
    /// The release's failure, for the last hold (see [`LockGuard::release`]).
    pub fn release(mut self) -> Result<(), Error> {
        self.end()
    }

    fn end(&mut self) -> Result<(), Error> {
        if std::mem::replace(&mut self.ended, true) {
            return Ok(());
        }
        let leave = self.table.holds.lock().leave(&self.key);
        let Some(Leave::Release(shared)) = leave else {
            return Ok(());
        };
        let guard = shared.guard.lock().take();
        let released = guard.map_or(Ok(()), LockGuard::release);
        // Waiters of other holders go to the store once it has the lock back.
        self.table.changed.notify_all();
        released
    }
}

impl<B: LockBackend + 'static> Hold for ReentrantGuard<B> {
    fn context(&self) -> &LeaseContext {
        &self.shared.context
    }
}

impl<B: LockBackend + 'static> Drop for ReentrantGuard<B> {
    fn drop(&mut self) {
        if let Err(err) = self.end() {
            tracing::warn!(lock = %self.key, error = %err, "release after the last hold failed");
        }
    }
}
