//! [`ReadWriteLocks`]: fenced, writer-preferring read/write locks, with [`ReadGuard`] and
//! [`WriteGuard`].

use std::fmt;
use std::sync::Arc;

use leader_core::__private::SharedSide;
use leader_core::{
    Error, Hold, LeaseContext, LeaseMode, MaxReaders, Reentered, Role, SharedLockBackend,
    SharedState,
};

use crate::acquire::acquire_shared;
use crate::elector::LeaderElector;
use crate::guard::LockGuard;
use crate::held::HeldLease;

/// Read/write locks over one elector's backend, options and tenant: many readers or one
/// writer per name, each hold with its own lease and fencing token.
///
/// - **Readers share**, up to [`with_max_readers`](Self::with_max_readers) (64 by default).
///   Each reader's hold is a lease of its own, renewed while its guard lives
///   ([`LeaseMode::Watchdog`]): a reader that crashes frees itself when its lease runs out,
///   and never holds writers out for longer.
/// - **Writers are exclusive and come first.** A writer that finds readers records its
///   intent in the store and waits: from then on no new reader enters (a stream of readers
///   cannot starve it) and no other writer passes it. The intent lapses a lease after the
///   writer last asked (a writer that died waiting holds nobody out for longer), and a
///   writer that gives up at `wait_time` withdraws it at once.
/// - **One fencing counter per name**: a writer's token is greater than every token issued
///   to a reader before it, and a reader's greater than the last writer's, so one resource
///   can fence both (pass [`fencing_token`](ReadGuard::fencing_token) along with each
///   write and reject older ones).
/// - Everything else is as for [`LeaderElector::acquire`]: `wait_time`, release
///   notifications, late answers, orphan releases, the minimum lease, fail closed.
///
/// A read/write lock and the exclusive lock of the same name are separate locks.
///
/// # Examples
///
/// ```
/// use leader_blocking::{LeaderElector, ReadWriteLocks};
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseMode};
///
/// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let locks = ReadWriteLocks::new(&elector);
///
/// // Two readers of the report at once.
/// let a = locks.read("report", LeaseMode::watchdog())?;
/// let b = locks.read("report", LeaseMode::watchdog())?;
/// assert_eq!(locks.state("report")?.readers.len(), 2);
/// drop((a, b));
///
/// // Then the rebuild, alone, with a token above every reader's.
/// let rebuild = locks.write("report", LeaseMode::watchdog())?;
/// assert_eq!(rebuild.fencing_token(), 3);
/// # Ok::<(), leader_core::Error>(())
/// ```
pub struct ReadWriteLocks<B: SharedLockBackend + 'static> {
    elector: LeaderElector<B>,
    read: Arc<SharedSide<B>>,
    write: Arc<SharedSide<B>>,
}

impl<B: SharedLockBackend + 'static> Clone for ReadWriteLocks<B> {
    fn clone(&self) -> Self {
        ReadWriteLocks {
            elector: self.elector.clone(),
            read: Arc::clone(&self.read),
            write: Arc::clone(&self.write),
        }
    }
}

impl<B: SharedLockBackend + 'static> fmt::Debug for ReadWriteLocks<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadWriteLocks")
            .field("backend", &self.elector.backend().name())
            .finish_non_exhaustive()
    }
}

impl<B: SharedLockBackend + 'static> ReadWriteLocks<B> {
    /// Read/write locks over `elector`'s backend, options and tenant.
    pub fn new(elector: &LeaderElector<B>) -> Self {
        let backend = elector.backend();
        ReadWriteLocks {
            elector: elector.clone(),
            read: side(backend, Role::Read, MaxReaders::DEFAULT),
            write: side(backend, Role::Write, MaxReaders::DEFAULT),
        }
    }

    /// At most `readers` readers per lock (between 1 and [`MaxReaders::LIMIT`]): a reader
    /// beyond them waits as for a writer.
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
    /// writer) to be done.
    ///
    /// # Errors
    ///
    /// As [`LeaderElector::acquire`]: [`Error::NotAcquired`] naming the writer (or a
    /// reader, when the readers are at their limit) if it stayed held, a backend failure,
    /// [`Error::LeaseLost`], bad input.
    pub fn read(&self, name: &str, mode: LeaseMode) -> Result<ReadGuard<B>, Error> {
        self.hold(&self.read, name, mode)
            .map(|guard| ReadGuard { guard })
    }

    /// Acquires `name` for writing, waiting up to `wait_time` for the writer and the readers
    /// to leave; new readers queue behind it meanwhile.
    ///
    /// # Errors
    ///
    /// As [`read`](Self::read).
    pub fn write(&self, name: &str, mode: LeaseMode) -> Result<WriteGuard<B>, Error> {
        self.hold(&self.write, name, mode)
            .map(|guard| WriteGuard { guard })
    }

    /// A snapshot of `name`: its writer, readers and a waiting writer's intent (stale the
    /// moment it returns; never decide to act on it).
    ///
    /// # Errors
    ///
    /// A bad name or a backend failure.
    pub fn state(&self, name: &str) -> Result<SharedState, Error> {
        let key = self.elector.lock_key(name)?;
        let state = self.elector.backend().state_shared(&key)?;
        Ok(state.with_lock_name(name))
    }

    fn hold(
        &self,
        side: &Arc<SharedSide<B>>,
        name: &str,
        mode: LeaseMode,
    ) -> Result<LockGuard<SharedSide<B>>, Error> {
        let key = self.elector.lock_key(name)?;
        let (options, keepalive) = mode.apply(self.elector.options())?;
        let (lease, sent_at) = acquire_shared(side, &options, &key)?.acquired_or_not(&key)?;
        let held = HeldLease::new(Arc::clone(side), lease, sent_at, name, 0, keepalive);
        Ok(LockGuard::from_held(held.check_start()?))
    }
}

fn side<B>(backend: &Arc<B>, role: Role, readers: MaxReaders) -> Arc<SharedSide<B>> {
    Arc::new(SharedSide::new(Arc::clone(backend), role, readers))
}

macro_rules! side_guard {
    ($guard:ident, $what:literal) => {
        #[doc = concat!("A held ", $what, " of a read/write lock (see [`ReadWriteLocks`]); released when dropped.")]
        ///
        /// With [`LeaseMode::Watchdog`] it is renewed while it lives; check
        /// [`is_lost`](Self::is_lost) (or the fencing token at your storage) before each
        /// side effect.
        #[must_use = "the hold is released when the guard is dropped"]
        pub struct $guard<B: SharedLockBackend + 'static> {
            guard: LockGuard<SharedSide<B>>,
        }

        impl<B: SharedLockBackend + 'static> fmt::Debug for $guard<B> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($guard))
                    .field("fencing_token", &self.fencing_token())
                    .finish_non_exhaustive()
            }
        }

        impl<B: SharedLockBackend + 'static> $guard<B> {
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

            /// Releases the hold now (dropping the guard does the same, logging any
            /// failure).
            ///
            /// # Errors
            ///
            /// A backend failure (a transient one is released again in the background).
            pub fn release(self) -> Result<(), Error> {
                self.guard.release()
            }
        }

        impl<B: SharedLockBackend + 'static> Hold for $guard<B> {
            fn context(&self) -> &LeaseContext {
                self.guard.context()
            }
        }
    };
}

side_guard!(ReadGuard, "read");
side_guard!(WriteGuard, "write");
