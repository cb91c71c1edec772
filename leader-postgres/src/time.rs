//! Durations as the microseconds the statements take.

use std::time::Duration;

/// The longest lease a statement is given: 1,000 years, far inside what PostgreSQL's
/// timestamps hold, and longer than any deployment.
const MAX_MICROS: i64 = 1_000 * 366 * 24 * 3600 * 1_000_000;

/// `duration` in whole microseconds, at most 1,000 years.
pub(crate) fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros())
        .unwrap_or(MAX_MICROS)
        .min(MAX_MICROS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps_to_a_thousand_years() {
        assert_eq!(micros(Duration::from_millis(1500)), 1_500_000);
        assert_eq!(micros(Duration::MAX), MAX_MICROS);
    }
}
