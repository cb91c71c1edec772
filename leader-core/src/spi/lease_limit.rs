//! [`LeaseTooLong`]: a lease a store cannot hold, and [`MAX_SERVER_LEASE`], the longest the
//! server backends take.

use std::time::Duration;

/// The longest lease the server backends (Redis, MongoDB, PostgreSQL) take: 1,000 years.
///
/// Far inside what each server's time arithmetic holds (milliseconds or microseconds in an
/// `i64`, on top of its clock) and longer than any deployment; a longer lease (up to
/// `Duration::MAX`) would overflow there, mid-script or mid-statement, or be cut short.
/// Backends refuse it with [`LeaseTooLong`] before anything is sent. The embedded
/// backends take what their clocks hold.
pub const MAX_SERVER_LEASE: Duration = Duration::from_secs(1_000 * 366 * 24 * 3600);

/// A lease longer than a backend can hold: the source of the permanent
/// [`BackendError`](crate::BackendError) every backend gives for it, having changed
/// nothing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{LeaseTooLong, MAX_SERVER_LEASE};
///
/// assert_eq!(LeaseTooLong::check(Duration::from_secs(30), MAX_SERVER_LEASE), Ok(Duration::from_secs(30)));
/// let refused = LeaseTooLong::check(Duration::MAX, MAX_SERVER_LEASE).unwrap_err();
/// assert_eq!(refused.lease(), Duration::MAX);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a lease of {lease:?} is longer than this backend can hold")]
pub struct LeaseTooLong {
    lease: Duration,
}

impl LeaseTooLong {
    /// The refusal of `lease`.
    pub fn new(lease: Duration) -> Self {
        LeaseTooLong { lease }
    }

    /// `lease` when it is at most `max`, else its refusal.
    ///
    /// # Errors
    ///
    /// [`LeaseTooLong`] when `lease` is longer than `max`.
    pub fn check(lease: Duration, max: Duration) -> Result<Duration, LeaseTooLong> {
        if lease <= max {
            Ok(lease)
        } else {
            Err(LeaseTooLong::new(lease))
        }
    }

    /// The lease that was refused.
    pub fn lease(&self) -> Duration {
        self.lease
    }
}
