//! Conversions between `std::time` and BSON dates (milliseconds since the Unix epoch).
//!
//! Checked both ways: a date read from the server that `SystemTime` cannot hold is an
//! error for the caller to report, never a panic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongodb::bson::DateTime;

/// Milliseconds in `duration`, saturating at `i64::MAX` (options are validated far below it).
pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// `time` as a BSON date, truncated to the millisecond and saturating at the ends of its range.
pub(crate) fn to_bson(time: SystemTime) -> DateTime {
    let ms = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => millis(after),
        Err(before) => millis(before.duration()).saturating_neg(),
    };
    DateTime::from_millis(ms)
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
    fn round_trips_to_the_millisecond_on_both_sides_of_the_epoch() {
        let after = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(from_bson(to_bson(after)), Some(after));
        let before = UNIX_EPOCH - Duration::from_millis(86_400_000);
        assert_eq!(from_bson(to_bson(before)), Some(before));
        let sub_ms = after + Duration::from_micros(999);
        assert_eq!(from_bson(to_bson(sub_ms)), Some(after));
    }

    #[test]
    fn extreme_dates_do_not_panic() {
        let _ = from_bson(DateTime::from_millis(i64::MAX));
        let _ = from_bson(DateTime::from_millis(i64::MIN));
        assert_eq!(millis(Duration::MAX), i64::MAX);
    }
}
