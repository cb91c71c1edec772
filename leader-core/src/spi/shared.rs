//! Read/write locks: the requests, answers and the two backend traits
//! ([`SharedLockBackend`], [`AsyncSharedLockBackend`]).
//!
//! The rules are on [`SharedLockBackend`].

use std::future::Future;
use std::time::SystemTime;

use crate::error::{Error, OptionsError};
use crate::name::LockName;
use crate::spi::backend::{AsyncLockBackend, LockBackend};
use crate::spi::lease::Lease;
use crate::spi::outcome::{ExtendOutcome, ReleaseOutcome};
use crate::spi::request::{AcquireRequest, ReleaseRequest, Renewal};
use crate::spi::state::LeaderLease;

/// Which side of a read/write lock a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Shared with other readers.
    Read,
    /// Exclusive.
    Write,
}

impl Role {
    /// `"read"` or `"write"`, for logs, metrics and store records.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
        }
    }
}

/// How many readers may hold a read/write lock at once: between 1 and
/// [`MaxReaders::LIMIT`].
///
/// A bound keeps the record of one lock small on every store (a reader is a few dozen
/// bytes in it, and each acquire reads it whole).
///
/// # Examples
///
/// ```
/// use leader_core::MaxReaders;
/// assert_eq!(MaxReaders::new(8)?.get(), 8);
/// assert!(MaxReaders::new(0).is_err());
/// assert!(MaxReaders::new(MaxReaders::LIMIT + 1).is_err());
/// # Ok::<(), leader_core::OptionsError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MaxReaders(u32);

impl MaxReaders {
    /// The largest accepted count.
    pub const LIMIT: u32 = 1024;
    /// The default: 64 readers.
    pub const DEFAULT: MaxReaders = MaxReaders(64);

    /// `readers`, or [`OptionsError::ReadersOutOfRange`] for 0 or more than
    /// [`LIMIT`](Self::LIMIT).
    pub fn new(readers: u32) -> Result<Self, OptionsError> {
        if readers == 0 || readers > Self::LIMIT {
            return Err(OptionsError::ReadersOutOfRange {
                readers,
                max: Self::LIMIT,
            });
        }
        Ok(MaxReaders(readers))
    }

    /// The count.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for MaxReaders {
    fn default() -> Self {
        MaxReaders::DEFAULT
    }
}

/// An acquire of a read/write lock: an [`AcquireRequest`] (key, owner, node, lease) and
/// the role.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SharedRequest<'a> {
    /// The lock, the owner token, the node id, the lease, the clock.
    pub request: AcquireRequest<'a>,
    /// Read or write.
    pub role: Role,
    /// For a read: how many readers may hold the lock with this one (ignored for a write).
    pub max_readers: MaxReaders,
}

impl<'a> SharedRequest<'a> {
    /// A read, among at most `max_readers` readers.
    pub fn read(request: AcquireRequest<'a>, max_readers: MaxReaders) -> Self {
        SharedRequest {
            request,
            role: Role::Read,
            max_readers,
        }
    }

    /// A write.
    pub fn write(request: AcquireRequest<'a>) -> Self {
        SharedRequest {
            request,
            role: Role::Write,
            max_readers: MaxReaders::DEFAULT,
        }
    }

    /// A request in `role`.
    pub fn new(request: AcquireRequest<'a>, role: Role, max_readers: MaxReaders) -> Self {
        SharedRequest {
            request,
            role,
            max_readers,
        }
    }
}

/// A waiting writer's intent, as a snapshot shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriterIntent {
    /// The waiting writer's node id.
    pub leader_id: String,
    /// When the intent lapses unless the writer asks again.
    pub expires_at: SystemTime,
}

impl WriterIntent {
    /// An intent record.
    pub fn new(leader_id: impl Into<String>, expires_at: SystemTime) -> Self {
        WriterIntent {
            leader_id: leader_id.into(),
            expires_at,
        }
    }
}

/// A best-effort snapshot of a read/write lock: its writer, its readers (in the order
/// they came) and a waiting writer's intent. Never an expired hold.
///
/// # Examples
///
/// ```
/// use leader_core::SharedState;
/// let state = SharedState::empty("reports");
/// assert!(state.is_free());
/// assert!(state.writer.is_none() && state.readers.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedState {
    /// The lock's name as the caller knows it (no tenant prefix).
    pub lock_name: String,
    /// The writer.
    pub writer: Option<LeaderLease>,
    /// The readers.
    pub readers: Vec<LeaderLease>,
    /// A waiting writer's intent.
    pub intent: Option<WriterIntent>,
}

impl SharedState {
    /// A lock nobody holds.
    pub fn empty(lock_name: impl Into<String>) -> Self {
        SharedState {
            lock_name: lock_name.into(),
            writer: None,
            readers: Vec::new(),
            intent: None,
        }
    }

    /// A snapshot of these holders.
    pub fn new(
        lock_name: impl Into<String>,
        writer: Option<LeaderLease>,
        readers: Vec<LeaderLease>,
        intent: Option<WriterIntent>,
    ) -> Self {
        SharedState {
            lock_name: lock_name.into(),
            writer,
            readers,
            intent,
        }
    }

    /// Whether nobody holds the lock and no writer waits.
    pub fn is_free(&self) -> bool {
        self.writer.is_none() && self.readers.is_empty() && self.intent.is_none()
    }

    /// The same snapshot under another name (the electors strip a tenant's prefix).
    pub fn with_lock_name(mut self, lock_name: impl Into<String>) -> Self {
        self.lock_name = lock_name.into();
        self
    }
}

/// The answer to an acquire of a read/write lock.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedOutcome {
    /// The caller holds the lock in the role it asked for (or renewed a hold it had).
    Acquired(Lease),
    /// Refused: a writer holds it, or another writer waits, or (for a read) the readers
    /// are at the request's limit. The lock as the store saw it.
    Held(SharedState),
    /// A write whose intent is recorded (or renewed): readers still hold the lock, no new
    /// reader enters, and the writer should ask again (within a lease, or the intent
    /// lapses) when they leave. The lock as the store saw it.
    Queued(SharedState),
}

impl SharedOutcome {
    /// A short label for logs and metrics: `"acquired"`, `"held"` or `"queued"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SharedOutcome::Acquired(_) => "acquired",
            SharedOutcome::Held(_) => "held",
            SharedOutcome::Queued(_) => "queued",
        }
    }
}

/// A blocking backend with read/write locks.
///
/// # Contract
///
/// A read/write lock of a name is many readers or one writer, kept in the store apart from
/// the exclusive lock of the same name (the two never see each other). Its rules, the same
/// on every backend (`leader_core::kit::SharedRecord` writes them once):
///
/// - **Readers share.** A read is granted while no writer holds the lock, no other
///   writer waits (below) and fewer than the request's `max_readers` readers hold it.
///   Every reader's hold expires on its own: a crashed reader frees itself when its lease
///   runs out and never holds writers out for longer.
/// - **Writers are exclusive and preferred.** A write is granted when nobody holds the lock.
///   While readers remain, the first writer to ask records its *intent* and is told
///   [`SharedOutcome::Queued`]: from then on no new reader enters (no writer starvation)
///   and no other writer passes it. The intent expires a lease after the writer last asked,
///   so a writer that died waiting holds nobody out for longer.
/// - **One fencing counter.** Every grant takes the next token of one counter per name, so
///   a writer's token is greater than every token issued to a reader before it and a
///   reader's greater than the last writer's: one resource can fence both.
/// - **Everything else is as for exclusive locks** (the contract on [`LockBackend`],
///   applied to each role): an owner asking again in the role it holds renews and keeps
///   its token; `extend_shared` and `release_shared` act only for the owner token in that
///   role (a writer's `release_shared` also withdraws its intent); a release keeps the
///   hold until `acquired_at + min_lease_time`; expiry is decided on the store's clock; a
///   lease the store cannot hold is a permanent error and changes nothing; `state_shared`
///   never reports an expired hold; trouble is an error, never a grant made up.
/// - An uncontended acquire is one call to the store (one script, statement, transaction
///   or `findOneAndUpdate`); each backend's README says its round trips.
///
/// The contract suite checks it all (`leader-testkit`'s `shared_contract_tests!`).
pub trait SharedLockBackend: LockBackend {
    /// Acquires (or renews) `request.request.key` in `request.role`.
    fn try_acquire_shared(&self, request: SharedRequest<'_>) -> Result<SharedOutcome, Error>;

    /// Renews a hold in `role`.
    fn extend_shared(&self, renewal: Renewal<'_>, role: Role) -> Result<ExtendOutcome, Error>;

    /// Ends a hold in `role` (for a writer, or its intent), keeping it until
    /// `acquired_at + min_lease_time`.
    fn release_shared(
        &self,
        release: ReleaseRequest<'_>,
        role: Role,
    ) -> Result<ReleaseOutcome, Error>;

    /// A snapshot of the lock `key`.
    fn state_shared(&self, key: &LockName) -> Result<SharedState, Error>;
}

/// An async backend with read/write locks: [`SharedLockBackend`]'s contract, awaited.
pub trait AsyncSharedLockBackend: AsyncLockBackend {
    /// Acquires (or renews) `request.request.key` in `request.role`.
    fn try_acquire_shared(
        &self,
        request: SharedRequest<'_>,
    ) -> impl Future<Output = Result<SharedOutcome, Error>> + Send;

    /// Renews a hold in `role`.
    fn extend_shared(
        &self,
        renewal: Renewal<'_>,
        role: Role,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send;

    /// Ends a hold in `role` (for a writer, or its intent), keeping it until
    /// `acquired_at + min_lease_time`.
    fn release_shared(
        &self,
        release: ReleaseRequest<'_>,
        role: Role,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send;

    /// A snapshot of the lock `key`.
    fn state_shared(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<SharedState, Error>> + Send;
}
