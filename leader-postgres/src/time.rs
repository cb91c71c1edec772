//! Durations as the microseconds the statements take.

use std::time::Duration;

use leader_core::{LeaseTooLong, MAX_SERVER_LEASE};

use crate::error::OpError;

/// The longest lease a statement is given, in microseconds: [`MAX_SERVER_LEASE`], far
/// inside what PostgreSQL's timestamps hold (up to the year 294276).
const MAX_MICROS: i64 = MAX_SERVER_LEASE.as_secs() as i64 * 1_000_000;

/// A lease in whole microseconds.
///
/// # Errors
///
/// [`OpError::LeaseTooLong`] beyond 1,000 years: refused rather than cut short, so that a
/// lease is either what was asked or an error.
pub(crate) fn lease_micros(lease: Duration) -> Result<i64, OpError> {
    i64::try_from(lease.as_micros())
        .ok()
        .filter(|micros| *micros <= MAX_MICROS)
        .ok_or(OpError::LeaseTooLong(LeaseTooLong::new(lease)))
}

/// A minimum lease in whole microseconds, at most 1,000 years: longer than any lease, so
/// a longer one means the same (the lock is kept until its lease ends).
pub(crate) fn min_lease_micros(min_lease: Duration) -> i64 {
    i64::try_from(min_lease.as_micros())
        .unwrap_or(MAX_MICROS)
        .min(MAX_MICROS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_beyond_a_thousand_years_is_refused() {
        assert_eq!(
            lease_micros(Duration::from_millis(1500)).ok(),
            Some(1_500_000)
        );
        assert_eq!(
            lease_micros(Duration::from_micros(MAX_MICROS.unsigned_abs())).ok(),
            Some(MAX_MICROS)
        );
        for lease in [
            Duration::from_micros(MAX_MICROS.unsigned_abs() + 1),
            Duration::MAX,
        ] {
            assert!(
                matches!(lease_micros(lease), Err(OpError::LeaseTooLong(l)) if l.lease() == lease)
            );
        }
    }

    #[test]
    fn a_minimum_lease_is_cut_to_a_thousand_years() {
        assert_eq!(min_lease_micros(Duration::from_millis(1500)), 1_500_000);
        assert_eq!(min_lease_micros(Duration::MAX), MAX_MICROS);
    }
}
