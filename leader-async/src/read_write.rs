//! [`AsyncReadWriteLocks`]: fenced, writer-preferring read/write locks, with
//! [`AsyncReadGuard`] and [`AsyncWriteGuard`].

use std::fmt;
use std::sync::Arc;

use leader_core::__private::SharedSide;
use leader_core::{
    AsyncSharedLockBackend, Error, Hold, LeaseContext, LeaseMode, MaxReaders, Reentered, Role,
    SharedState,
};

use crate::acquire::acquire_shared;
use crate::elector::AsyncLeaderElector;
use crate::guard::AsyncLockGuard;
use crate::held::AsyncHeldLease;

/// Read/write locks over one async elector's backend, options and tenant: many readers or
/// one writer per name, each hold with its own lease and fencing token.
///
/// The rules are those of `leader-blocking`'s `ReadWriteLocks`: readers share (up to
/// [`with_max_readers`](Self::with_max_readers), 64 by default), each on a lease of its own
/// (a crashed reader frees itself when it runs out); a writer that finds readers records
/// its intent and new readers queue behind it (no writer starvation), the intent lapsing a
/// lease after the writer last asked and withdrawn when it gives up or its future is
/// dropped; one fencing counter per name, so a writer's token exceeds every earlier
/// reader's and a reader's the last writer's. `wait_time`, release notifications, late
/// answers, orphan releases and the minimum lease are as for
/// [`AsyncLeaderElector::acquire`]. A dropped guard releases in the background.
///
/// # Examples
///
/// ```
/// use leader_async::{AsyncLeaderElector, AsyncReadWriteLocks};
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseMode};
///
/// # smol::block_on(async {
/// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let locks = AsyncReadWriteLocks::new(&elector);
/// let reader = locks.read("schema", LeaseMode::watchdog()).await?;
/// assert_eq!(locks.state("schema").await?.readers.len(), 1);
/// reader.release().await;
/// let migration = locks.write("schema", LeaseMode::watchdog()).await?;
/// assert_eq!(migration.fencing_token(), 2);
/// # Ok::<(), leader_core::Error>(())
/// # }).unwrap();
/// ```
pub struct AsyncReadWriteLocks<B: AsyncSharedLockBackend + 'static> {
    elector: AsyncLeaderElector<B>,
    read: Arc<SharedSide<B>>,
    write: Arc<SharedSide<B>>,
}

impl<B: AsyncSharedLockBackend + 'static> Clone for AsyncReadWriteLocks<B> {
    fn clone(&self) -> Self {
        AsyncReadWriteLocks {
            elector: self.elector.clone(),
            read: Arc::clone(&self.read),
            write: Arc::clone(&self.write),
        }
    }
}

impl<B: AsyncSharedLockBackend + 'static> fmt::Debug for AsyncReadWriteLocks<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncReadWriteLocks")
            .field("backend", &self.elector.backend().name())
            .finish_non_exhaustive()
    }
}

impl<B: AsyncSharedLockBackend + 'static> AsyncReadWriteLocks<B> {
    /// Read/write locks over `elector`'s backend, options and tenant.
    pub fn new(elector: &AsyncLeaderElector<B>) -> Self {
        let backend = elector.backend();
        AsyncReadWriteLocks {
            elector: elector.clone(),
            read: side(backend, Role::Read, MaxReaders::DEFAULT),
            write: side(backend, Role::Write, MaxReaders::DEFAULT),
        }
    }

    /// At most `readers` readers per lock (between 1 and [`MaxReaders::LIMIT`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] for 0 or more than the limit.
    pub fn with_max_readers(mut self, readers: u32) -> Result<Self, Error> {
        let readers = MaxReaders::new(readers)?;
        self.read = side(self.elector.backend(), Role::Read, readers);
        Ok(self)
    }

    /// Acquires `name` for reading, waiting up to `wait_time` for a writer (or a waiting
    /// writer) to be done. Cancel safe.
    ///
    /// # Errors
    ///
    /// As [`AsyncLeaderElector::acquire`].
    pub async fn read(&self, name: &str, mode: LeaseMode) -> Result<AsyncReadGuard<B>, Error> {
        let guard = self.hold(&self.read, name, mode).await?;
        Ok(AsyncReadGuard { guard })
    }

    /// Acquires `name` for writing, waiting up to `wait_time` for the writer and the readers
    /// to leave; new readers queue behind it meanwhile. Cancel safe: a dropped future
    /// withdraws its intent.
    ///
    /// # Errors
    ///
    /// As [`AsyncLeaderElector::acquire`].
    pub async fn write(&self, name: &str, mode: LeaseMode) -> Result<AsyncWriteGuard<B>, Error> {
        let guard = self.hold(&self.write, name, mode).await?;
        Ok(AsyncWriteGuard { guard })
    }

    /// A snapshot of `name`: its writer, readers and a waiting writer's intent.
    ///
    /// # Errors
    ///
    /// A bad name or a backend failure.
    pub async fn state(&self, name: &str) -> Result<SharedState, Error> {
        let key = self.elector.lock_key(name)?;
        let state = self.elector.backend().state_shared(&key).await?;
        Ok(state.with_lock_name(name))
    }

    async fn hold(
        &self,
        side: &Arc<SharedSide<B>>,
        name: &str,
        mode: LeaseMode,
    ) -> Result<AsyncLockGuard<SharedSide<B>>, Error> {
        let key = self.elector.lock_key(name)?;
        let (options, keepalive) = mode.apply(self.elector.options())?;
        let step = acquire_shared(side, &options, &key).await?;
        let (lease, sent_at) = step.acquired_or_not(&key)?;
        let held = AsyncHeldLease::new(Arc::clone(side), lease, sent_at, name, 0, keepalive);
        AsyncLockGuard::start(held)
    }
}

fn side<B>(backend: &Arc<B>, role: Role, readers: MaxReaders) -> Arc<SharedSide<B>> {
    Arc::new(SharedSide::new(Arc::clone(backend), role, readers))
}

macro_rules! side_guard {
    ($guard:ident, $what:literal) => {
        #[doc = concat!("A held ", $what, " of a read/write lock (see [`AsyncReadWriteLocks`]); released when dropped (in the background) or by [`release`](Self::release).")]
        #[must_use = "the hold is released when the guard is dropped"]
        pub struct $guard<B: AsyncSharedLockBackend + 'static> {
            guard: AsyncLockGuard<SharedSide<B>>,
        }

        impl<B: AsyncSharedLockBackend + 'static> fmt::Debug for $guard<B> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($guard))
                    .field("fencing_token", &self.fencing_token())
                    .finish_non_exhaustive()
            }
        }

        impl<B: AsyncSharedLockBackend + 'static> $guard<B> {
            /// The fencing token of this hold.
            pub fn fencing_token(&self) -> u64 {
                self.guard.fencing_token()
            }

            /// The lease's context: deadline, lost flag, lost signal.
            pub fn context(&self) -> &LeaseContext {
                self.guard.context()
            }

            /// `true` once the hold was lost or ran out.
            pub fn is_lost(&self) -> bool {
                self.guard.is_lost()
            }

            /// A nested hold for code the guard is handed to: the same lease and token,
            /// no store call (see [`Hold`]).
            pub fn reenter(&self) -> Reentered<'_> {
                self.guard.reenter()
            }

            /// Stops renewing and releases the hold now.
            pub async fn release(self) {
                self.guard.release().await;
            }
        }

        impl<B: AsyncSharedLockBackend + 'static> Hold for $guard<B> {
            fn context(&self) -> &LeaseContext {
                self.guard.context()
            }
        }
    };
}

side_guard!(AsyncReadGuard, "read");
side_guard!(AsyncWriteGuard, "write");
