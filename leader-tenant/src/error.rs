//! [`TenantError`]: the one error enum of this crate.

use std::time::Duration;

use leader_core::{BoxError, Error, NameError};

/// Everything tenant scoping and the tenant pollers can report.
///
/// It sits *beside* [`leader_core::Error`] rather than inside it: an elector error becomes
/// [`TenantError::Elector`] through `From`, except a rejected lock name, which becomes
/// [`TenantError::Name`] so that every name problem (including a tenant-prefixed name over
/// the 255-byte limit) is matched in one place.
///
/// # Examples
///
/// ```
/// use leader_tenant::{TenantError, TenantId};
///
/// assert!(matches!(TenantId::new("acme:eu"), Err(TenantError::Colon { index: 4 })));
/// assert!(matches!(TenantId::new(""), Err(TenantError::EmptyId)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TenantError {
    /// The tenant id is empty.
    #[error("tenant id is empty")]
    EmptyId,
    /// The tenant id is longer than [`TenantId::MAX_LEN`](crate::TenantId::MAX_LEN) bytes.
    #[error("tenant id `{id}` is {len} bytes long; the limit is {max} bytes")]
    IdTooLong {
        /// The rejected id, cut to its first 64 characters.
        id: String,
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The tenant id contains `:`, the separator of `tenant:<id>:<lock>`.
    #[error("tenant id contains ':' at byte {index}; ':' separates the tenant from the lock name")]
    Colon {
        /// Its byte offset in the id.
        index: usize,
    },
    /// The tenant id contains a control character.
    #[error("tenant id contains the control character {ch:?} at byte {index}")]
    ControlCharacter {
        /// The character.
        ch: char,
        /// Its byte offset in the id.
        index: usize,
    },
    /// The tenant id contains `{` or `}`, which are reserved for Redis Cluster hash tags.
    #[error("tenant id contains {ch:?} at byte {index}; braces are reserved for cluster hash tags")]
    Brace {
        /// The brace.
        ch: char,
        /// Its byte offset in the id.
        index: usize,
    },
    /// The tenant id starts or ends with whitespace (or is only whitespace): `"acme"` and
    /// `"acme "` from a tenant list would otherwise be two tenants.
    #[error("tenant id {id:?} starts or ends with whitespace; trim it")]
    SurroundingWhitespace {
        /// The rejected id, cut to its first 64 characters.
        id: String,
    },
    /// `for_tenant` was called on an elector that is already scoped. Scopes do not nest:
    /// call `for_tenant` on the unscoped elector instead.
    #[error("the elector is already scoped by the prefix `{prefix}`; tenant scopes do not nest")]
    AlreadyScoped {
        /// The prefix the elector already has.
        prefix: String,
    },
    /// A lock name was rejected, for example `tenant:<id>:<lock>` is over 255 bytes.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The elector failed: backend trouble, invalid options, shut down, ...
    #[error(transparent)]
    Elector(Error),
    /// The poller's interval is shorter than one millisecond.
    #[error("the poll interval must be at least 1 ms, got {0:?}")]
    IntervalTooShort(Duration),
    /// The poller's fixed minimum lease, or its cycle-end guard, is longer than its interval.
    #[error(
        "the minimum lease or cycle-end guard ({min:?}) must not exceed the poll interval ({interval:?})"
    )]
    MinLeaseAboveInterval {
        /// The minimum lease or guard.
        min: Duration,
        /// The interval.
        interval: Duration,
    },
    /// The tenant source failed to list the tenants.
    #[error("the tenant source failed: {0}")]
    Source(#[source] BoxError),
}

impl From<Error> for TenantError {
    fn from(err: Error) -> Self {
        match err {
            Error::InvalidName(name) => TenantError::Name(name),
            other => TenantError::Elector(other),
        }
    }
}

impl TenantError {
    /// `true` when retrying later may succeed (see [`Error::is_transient`]). A tenant
    /// source's failure cannot be classified here and counts as `false`.
    ///
    /// ```
    /// use leader_tenant::TenantError;
    /// assert!(!TenantError::EmptyId.is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        match self {
            TenantError::Elector(err) => err.is_transient(),
            _ => false,
        }
    }

    /// The lock key an elector error concerns, when there is one.
    pub fn lock_key(&self) -> Option<&str> {
        match self {
            TenantError::Elector(err) => err.lock_key(),
            _ => None,
        }
    }
}
