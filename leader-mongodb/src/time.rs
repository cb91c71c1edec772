//! Reading BSON dates (milliseconds since the Unix epoch) as `std::time`.
//!
//! Checked: a date read from the server that `SystemTime` cannot hold is an
//! error for the caller to report, never a panic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leader_core::{LeaseTooLong, MAX_SERVER_LEASE};
use mongodb::bson::DateTime;

use crate::error::OpError;

/// The longest lease: [`MAX_SERVER_LEASE`], far inside what a BSON date holds
/// (milliseconds in an `i64`, about 292 million years).
const MAX_LEASE: Duration = MAX_SERVER_LEASE;

/// Milliseconds in `duration`, saturating at `i64::MAX`: for a lease checked by
/// [`check_lease`], or a minimum lease, which cannot keep a lock past its expiry anyway.
pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// `lease` if the server's date arithmetic holds `now + lease` whatever the server's
/// clock.
///
/// # Errors
///
/// [`OpError::LeaseTooLong`] beyond 1,000 years: refused here rather than left to the
/// server, whose date arithmetic may overflow or cut it.
pub(crate) fn check_lease(lease: Duration) -> Result<Duration, OpError> {
    Ok(LeaseTooLong::check(lease, MAX_LEASE)?)
}

/// A BSON date as a `SystemTime`, or `None` when the platform cannot represent it.
pub(crate) fn from_bson(date: DateTime) -> Option<SystemTime> {
    let ms = date.timestamp_millis();
    let magnitude = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        UNIX_EPOCH.checked_add(magnitude)
    } else {
        UNIX_EPOCH.checked_sub(magnitude)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dates_on_both_sides_of_the_epoch() {
        let after = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(
            from_bson(DateTime::from_millis(1_700_000_000_123)),
            Some(after)
        );
        let before = UNIX_EPOCH - Duration::from_millis(86_400_000);
        assert_eq!(from_bson(DateTime::from_millis(-86_400_000)), Some(before));
    }

    #[test]
    fn extreme_dates_do_not_panic() {
        let _ = from_bson(DateTime::from_millis(i64::MAX));
        let _ = from_bson(DateTime::from_millis(i64::MIN));
        assert_eq!(millis(Duration::MAX), i64::MAX);
    }

    #[test]
    fn a_lease_beyond_a_thousand_years_is_refused() {
        assert_eq!(check_lease(MAX_LEASE).ok(), Some(MAX_LEASE));
        for lease in [MAX_LEASE + Duration::from_millis(1), Duration::MAX] {
            assert!(
                matches!(check_lease(lease), Err(OpError::LeaseTooLong(l)) if l.lease() == lease)
            );
        }
    }
}
