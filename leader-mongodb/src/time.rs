//! Reading BSON dates (milliseconds since the Unix epoch) as `std::time`.
//!
//! Checked: a date read from the server that `SystemTime` cannot hold is an
//! error for the caller to report, never a panic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongodb::bson::DateTime;

/// Milliseconds in `duration`, saturating at `i64::MAX` (options are validated far below it).
pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
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
}
