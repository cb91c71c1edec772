//! [`TenantError`]: the one error enum of this crate.

use std::time::Duration;

use leader_core::{BoxError, Error, NameError, TenantIdError};

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
/// use leader_tenant::{TenantError, TenantId, TenantIdError};
///
/// let err = TenantError::from(TenantId::new("acme:eu").unwrap_err());
/// assert!(matches!(err, TenantError::Id(TenantIdError::Colon { index: 4 })));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TenantError {
    /// A tenant id (from the tenant source) was rejected; the inner error names the problem.
    #[error(transparent)]
    Id(#[from] TenantIdError),
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
            Error::InvalidTenant(id) => TenantError::Id(id),
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
    /// use leader_tenant::TenantIdError;
    /// assert!(!TenantError::Id(TenantIdError::Empty).is_transient());
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
