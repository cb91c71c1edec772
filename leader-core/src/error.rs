//! The one error type of the toolkit, and the option and backend errors it wraps (the
//! lock-name and tenant-id errors live beside their types, in `name` and `tenant`).

use std::time::Duration;

use crate::name::NameError;
use crate::spi::state::LeaderLease;
use crate::tenant::TenantIdError;

/// A boxed error from a backend's driver, kept as the source of a [`BackendError`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong when electing a leader or holding a lock.
///
/// Contention is *not* an error: a lock held by another node is reported as
/// `None` / [`LeaderRunResult::Skipped`](crate::LeaderRunResult::Skipped).
/// Backend trouble always is one (the electors fail closed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A lock name was rejected; the inner error names the problem.
    #[error(transparent)]
    InvalidName(#[from] NameError),
    /// A tenant id was rejected (by `for_tenant`); the inner error names the problem.
    #[error(transparent)]
    InvalidTenant(#[from] TenantIdError),
    /// `for_tenant` was called on an elector that is already scoped. Scopes do not nest:
    /// call `for_tenant` on the unscoped elector instead.
    #[error("the elector is already scoped by the prefix `{prefix}`; scopes do not nest")]
    AlreadyScoped {
        /// The prefix the elector already has.
        prefix: String,
    },
    /// [`LeaderElectionOptions`](crate::LeaderElectionOptions) were rejected.
    #[error(transparent)]
    InvalidOptions(#[from] OptionsError),
    /// The backend failed (unreachable, timed out, corrupted record, ...).
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A lease this node held is gone: it expired, or another owner took the lock.
    #[error("the lease on lock `{key}` was lost")]
    LeaseLost {
        /// The full lock key.
        key: String,
    },
    /// A lock that had to be acquired was still held by another node when `wait_time` ran out.
    #[error("lock `{key}` was not acquired{}", holder_suffix(.holder))]
    NotAcquired {
        /// The full lock key.
        key: String,
        /// The holder seen on the last attempt, if the backend reported one.
        holder: Option<Box<LeaderLease>>,
    },
    /// The elector was shut down, so it accepts no more work.
    #[error("the elector has been shut down")]
    ShutDown,
    /// A reentrant lock's holder asked for a hold beyond the nesting limit (runaway
    /// recursion, as a rule); the holds it has are unchanged.
    #[error(
        "lock `{key}` is already held {limit} times by the same holder; the nesting limit is {limit}"
    )]
    ReentrancyLimit {
        /// The full lock key.
        key: String,
        /// The limit.
        limit: u32,
    },
}

fn holder_suffix(holder: &Option<Box<LeaderLease>>) -> String {
    match holder {
        Some(lease) => format!(
            ": held by `{}` (fencing token {})",
            lease.leader_id, lease.fencing_token
        ),
        None => String::new(),
    }
}

impl Error {
    /// `true` when retrying the same call later may succeed: a transient backend
    /// failure or contention. Invalid input and permanent backend failures are `false`.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Backend(err) => err.is_transient(),
            Error::NotAcquired { .. } | Error::LeaseLost { .. } => true,
            _ => false,
        }
    }

    /// The lock key this error concerns, when there is one.
    pub fn lock_key(&self) -> Option<&str> {
        match self {
            Error::Backend(err) => Some(err.key()),
            Error::LeaseLost { key }
            | Error::NotAcquired { key, .. }
            | Error::ReentrancyLimit { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// Why [`LeaderElectionOptions`](crate::LeaderElectionOptions) were rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// `lease_time` is shorter than one millisecond (backends count leases in milliseconds).
    #[error("lease_time must be at least 1 ms, got {0:?}")]
    LeaseTooShort(Duration),
    /// `min_lease_time` is longer than `lease_time`.
    #[error("min_lease_time ({min:?}) must not exceed lease_time ({lease:?})")]
    MinLeaseAboveLease {
        /// The minimum lease.
        min: Duration,
        /// The lease.
        lease: Duration,
    },
    /// A duration is too long to be added to a timestamp.
    #[error("{field} ({value:?}) is too long; the limit is {max:?}")]
    DurationTooLong {
        /// Which option.
        field: &'static str,
        /// The value given.
        value: Duration,
        /// The largest accepted value.
        max: Duration,
    },
    /// A duration that must be positive is zero.
    #[error("{field} must be greater than zero")]
    ZeroDuration {
        /// Which setting.
        field: &'static str,
    },
    /// A campaign's heartbeat is not well below its lease.
    #[error("heartbeat ({heartbeat:?}) must be at most a third of the lease ({lease:?})")]
    HeartbeatTooLong {
        /// The heartbeat.
        heartbeat: Duration,
        /// The lease.
        lease: Duration,
    },
    /// A campaign's renew deadline is not between its heartbeat and its lease.
    #[error(
        "renew_deadline ({renew_deadline:?}) must be above the heartbeat ({heartbeat:?}) and below the lease ({lease:?})"
    )]
    RenewDeadlineOutOfRange {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The heartbeat.
        heartbeat: Duration,
        /// The lease.
        lease: Duration,
    },
    /// The node id is empty.
    #[error("node_id is empty")]
    EmptyNodeId,
    /// The node id is too long.
    #[error("node_id is {len} bytes long; the limit is {max} bytes")]
    NodeIdTooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The node id contains a control character.
    #[error("node_id contains the control character {ch:?} at byte {index}")]
    NodeIdControlCharacter {
        /// The character.
        ch: char,
        /// Its byte offset.
        index: usize,
    },
    /// A campaign is both ranked and for a group of more than one slot: ranked leadership
    /// elects one leader.
    #[error("a ranked campaign elects one leader; it cannot campaign for a group of {slots} slots")]
    RankedGroup {
        /// The group's slot count.
        slots: u32,
    },
    /// A read/write lock's reader count is zero or above the limit.
    #[error("a read/write lock needs between 1 and {max} readers, got {readers}")]
    ReadersOutOfRange {
        /// The reader count given.
        readers: u32,
        /// The largest accepted count.
        max: u32,
    },
    /// A leader group's slot count is zero or above the limit.
    #[error("a leader group needs between 1 and {max} slots, got {slots}")]
    GroupSlotsOutOfRange {
        /// The slot count given.
        slots: u32,
        /// The largest accepted count.
        max: u32,
    },
}

/// Whether a backend failure may go away by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendErrorKind {
    /// Connection refused or reset, timeout, failover in progress: retrying later may work.
    Transient,
    /// Wrong data at the lock key, a script or protocol error, bad credentials:
    /// retrying will not help until someone intervenes.
    Permanent,
}

/// A failure of a backend, naming the backend and the lock key.
#[derive(Debug, thiserror::Error)]
#[error("{backend} backend failed on lock `{key}` ({kind:?}): {source}")]
pub struct BackendError {
    backend: &'static str,
    key: String,
    kind: BackendErrorKind,
    #[source]
    source: BoxError,
}

impl BackendError {
    /// A new backend error.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::{BackendError, BackendErrorKind};
    /// let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    /// let err = BackendError::new("redis", "leader:{nightly}", BackendErrorKind::Transient, io);
    /// assert!(err.is_transient());
    /// assert_eq!(err.key(), "leader:{nightly}");
    /// ```
    pub fn new(
        backend: &'static str,
        key: impl Into<String>,
        kind: BackendErrorKind,
        source: impl Into<BoxError>,
    ) -> Self {
        BackendError {
            backend,
            key: key.into(),
            kind,
            source: source.into(),
        }
    }

    /// The backend's name (`"memory"`, `"redis"`, `"mongodb"`, ...).
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// The lock key the failed operation was about.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Transient or permanent.
    pub fn kind(&self) -> BackendErrorKind {
        self.kind
    }

    /// `true` for [`BackendErrorKind::Transient`].
    pub fn is_transient(&self) -> bool {
        self.kind == BackendErrorKind::Transient
    }
}
