//! Reentrant locks, async: holds counted by a key the caller chooses (see
//! [`AsyncReentrantLocks`]).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use event_listener::Event;
use leader_core::__private::{DEFAULT_REENTRANCY_LIMIT, Enter, Holds, Leave};
use leader_core::{AsyncLockBackend, Error, Hold, LeaderLease, LeaseContext, LeaseMode, LockName};
use parking_lot::Mutex;

use crate::elector::AsyncLeaderElector;
use crate::guard::AsyncLockGuard;
use crate::rt;

/// Locks that the same *holder* can take again while it holds them, async: the
/// counterpart of `leader-blocking`'s `ReentrantLocks`, with the same rules.
///
/// Holds are counted per lock and per holder key, a string the caller chooses and its
/// nested code shares (a request id, a job id), never per task or thread, so a hold taken
/// in one task can end in another:
///
/// - the first [`acquire`](Self::acquire) of a holder takes the lock from the store like
///   [`AsyncLeaderElector::acquire`]; the same holder again gets a nested hold of the same
///   lease: the same fencing token, no store call, and the lease as it is (a nested
///   hold's `mode` is not applied: it never shortens or lengthens the lease);
/// - another holder in this process waits (up to `wait_time`) until the lock is released
///   here, then takes it from the store like any node;
/// - holds end in any order; the last one releases the lock ([`release`] awaits it;
///   dropping the last guard releases it in the background, as dropping an
///   [`AsyncLockGuard`] does);
/// - a lease that is over takes no new hold ([`Error::LeaseLost`]);
/// - nesting deeper than the limit fails with [`Error::ReentrancyLimit`].
///
/// The holds are kept by this value and its clones: make it once and share it. Where the
/// outer hold can be handed down, pass it instead (`&impl Hold`, then [`Hold::reenter`]).
/// How this compares with Redisson's `RLock` and Hazelcast's `FencedLock`: see
/// `leader-blocking`'s `ReentrantLocks`.
///
/// [`release`]: AsyncReentrantGuard::release
///
/// # Examples
///
/// ```
/// use leader_async::{AsyncLeaderElector, AsyncReentrantLocks};
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseMode};
///
/// # smol::block_on(async {
/// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let locks = AsyncReentrantLocks::new(&elector);
/// let outer = locks.acquire("ledger", "request-42", LeaseMode::watchdog()).await?;
/// let inner = locks.acquire("ledger", "request-42", LeaseMode::watchdog()).await?;
/// assert_eq!(inner.fencing_token(), outer.fencing_token());
/// inner.release().await; // the lock stays held
/// assert_eq!(outer.holds(), 1);
/// outer.release().await; // the last hold: released
/// # Ok::<(), leader_core::Error>(())
/// # }).unwrap();
/// ```
pub struct AsyncReentrantLocks<B: AsyncLockBackend + 'static> {
    elector: AsyncLeaderElector<B>,
    table: Arc<Table<B>>,
}

/// The holds, and the waiters for their release.
struct Table<B: AsyncLockBackend + 'static> {
    holds: Mutex<Holds<Arc<Shared<B>>>>,
    changed: Event,
}

/// One lease, shared by its holder's holds.
struct Shared<B: AsyncLockBackend + 'static> {
    context: LeaseContext,
    /// The holder as acquired, to name when another holder's wait runs out.
    holder: Option<LeaderLease>,
    /// The guard of the lease: released with the last hold.
    guard: Mutex<Option<AsyncLockGuard<B>>>,
}

impl<B: AsyncLockBackend + 'static> Clone for AsyncReentrantLocks<B> {
    fn clone(&self) -> Self {
        AsyncReentrantLocks {
            elector: self.elector.clone(),
            table: Arc::clone(&self.table),
        }
    }
}

impl<B: AsyncLockBackend + 'static> fmt::Debug for AsyncReentrantLocks<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncReentrantLocks")
            .field("limit", &self.table.holds.lock().limit())
            .finish_non_exhaustive()
    }
}

impl<B: AsyncLockBackend + 'static> AsyncReentrantLocks<B> {
    /// The nesting limit unless [`with_limit`](Self::with_limit) says otherwise.
    pub const DEFAULT_LIMIT: u32 = DEFAULT_REENTRANCY_LIMIT;

    /// Reentrant locks taken through `elector` (its backend, options and name scope).
    pub fn new(elector: &AsyncLeaderElector<B>) -> Self {
        AsyncReentrantLocks {
            elector: elector.clone(),
            table: Arc::new(Table {
                holds: Mutex::new(Holds::new(Self::DEFAULT_LIMIT)),
                changed: Event::new(),
            }),
        }
    }

    /// The same, allowing `limit` holds per lock and holder (1: not reentrant at all;
    /// 0 is taken as 1). Holds taken before are forgotten: call it first.
    #[must_use]
    pub fn with_limit(self, limit: u32) -> Self {
        AsyncReentrantLocks {
            elector: self.elector,
            table: Arc::new(Table {
                holds: Mutex::new(Holds::new(limit)),
                changed: Event::new(),
            }),
        }
    }

    /// Takes `name` for `holder`: a nested hold if `holder` holds it here already, else
    /// from the store (see [`AsyncReentrantLocks`]). `mode` applies to the first hold only.
    ///
    /// # Errors
    ///
    /// As [`AsyncLeaderElector::acquire`] ([`Error::NotAcquired`] also when another holder
    /// in this process kept the lock for the whole wait), [`Error::ReentrancyLimit`] when
    /// `holder` holds it as many times as the limit allows, and [`Error::LeaseLost`] when
    /// `holder` holds it on a lease that is over.
    pub async fn acquire(
        &self,
        name: &str,
        holder: &str,
        mode: LeaseMode,
    ) -> Result<AsyncReentrantGuard<B>, Error> {
        let key = self.elector.lock_key(name)?;
        let (options, _) = mode.apply(self.elector.options())?;
        let deadline = Instant::now().checked_add(options.wait_time());
        loop {
            // Listen before asking, so that a change between the two is not missed.
            let changed = self.table.changed.listen();
            let held = {
                let mut holds = self.table.holds.lock();
                match holds.enter(&key, holder, |shared| shared.context.is_lost())? {
                    Enter::Nested { hold, .. } => return Ok(self.guard(hold, key)),
                    Enter::Acquire => break,
                    Enter::Wait => holds.held(&key).and_then(|shared| shared.holder.clone()),
                }
            };
            match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if rt::timeout(left, changed).await.is_none() {
                        return Err(Error::NotAcquired {
                            key: key.as_str().to_owned(),
                            holder: held.map(Box::new),
                        });
                    }
                }
                None => changed.await,
            }
        }
        let left = deadline.map_or(options.wait_time(), |deadline| {
            deadline.saturating_duration_since(Instant::now())
        });
        // Should this future be dropped here, the entry must not stay "acquiring".
        let entry = Entry {
            table: &self.table,
            key: &key,
            holder,
            settled: false,
        };
        let acquired = self.acquire_from_store(name, mode, left).await;
        entry.settle(acquired.as_ref().ok());
        match acquired {
            Ok(shared) => Ok(self.guard(shared, key)),
            Err(err) => Err(err),
        }
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

    async fn acquire_from_store(
        &self,
        name: &str,
        mode: LeaseMode,
        wait: Duration,
    ) -> Result<Arc<Shared<B>>, Error> {
        let options = self.elector.options().clone().with_wait_time(wait);
        let guard = self
            .elector
            .with_options(options)?
            .acquire(name, mode)
            .await?;
        Ok(Arc::new(Shared {
            context: guard.context().clone(),
            holder: guard.holder(),
            guard: Mutex::new(Some(guard)),
        }))
    }

    fn guard(&self, shared: Arc<Shared<B>>, key: LockName) -> AsyncReentrantGuard<B> {
        AsyncReentrantGuard {
            shared,
            table: Arc::clone(&self.table),
            key,
            ended: false,
        }
    }
}

/// A holder's first acquisition on its way to the store: reports its outcome to the table
/// once, and reports a failure if the acquiring future is dropped first.
struct Entry<'a, B: AsyncLockBackend + 'static> {
    table: &'a Table<B>,
    key: &'a LockName,
    holder: &'a str,
    settled: bool,
}

impl<B: AsyncLockBackend + 'static> Entry<'_, B> {
    fn settle(mut self, acquired: Option<&Arc<Shared<B>>>) {
        self.report(acquired.cloned());
    }

    fn report(&mut self, acquired: Option<Arc<Shared<B>>>) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        self.table
            .holds
            .lock()
            .acquired(self.key, self.holder, acquired);
        self.table.changed.notify(usize::MAX);
    }
}

impl<B: AsyncLockBackend + 'static> Drop for Entry<'_, B> {
    fn drop(&mut self) {
        self.report(None);
    }
}

/// One hold of an async reentrant lock (see [`AsyncReentrantLocks`]). Ends when
/// [`release`](Self::release)d or dropped; the lock is released when its holder's last
/// hold ends (in the background when that hold is dropped).
#[must_use = "the hold ends when the guard is dropped"]
pub struct AsyncReentrantGuard<B: AsyncLockBackend + 'static> {
    shared: Arc<Shared<B>>,
    table: Arc<Table<B>>,
    key: LockName,
    ended: bool,
}

impl<B: AsyncLockBackend + 'static> fmt::Debug for AsyncReentrantGuard<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncReentrantGuard")
            .field("key", &self.key)
            .field("fencing_token", &self.shared.context.fencing_token())
            .finish_non_exhaustive()
    }
}

impl<B: AsyncLockBackend + 'static> AsyncReentrantGuard<B> {
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

    /// Ends this hold now; the last hold releases the lock, and this waits for the
    /// release (a failed one is logged and retried in the background, as
    /// [`AsyncLockGuard::release`] does).
    pub async fn release(mut self) {
        if let Some(guard) = self.end() {
            guard.release().await;
            self.table.changed.notify(usize::MAX);
        }
    }

    /// Ends this hold: the lease's guard, when it was the last.
    fn end(&mut self) -> Option<AsyncLockGuard<B>> {
        if std::mem::replace(&mut self.ended, true) {
            return None;
        }
        let leave = self.table.holds.lock().leave(&self.key);
        match leave {
            Some(Leave::Release(shared)) => shared.guard.lock().take(),
            Some(Leave::Keep { .. }) | None => None,
        }
    }
}

impl<B: AsyncLockBackend + 'static> Hold for AsyncReentrantGuard<B> {
    fn context(&self) -> &LeaseContext {
        &self.shared.context
    }
}

impl<B: AsyncLockBackend + 'static> Drop for AsyncReentrantGuard<B> {
    fn drop(&mut self) {
        // The last hold's guard, dropped, releases the lease in the background.
        if let Some(guard) = self.end() {
            drop(guard);
            self.table.changed.notify(usize::MAX);
        }
    }
}
