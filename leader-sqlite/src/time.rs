//! The host's clock, in the microseconds the tables store.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::OpFailure;

/// Now, in microseconds since the Unix epoch.
pub(crate) fn now_micros() -> Result<i64, OpFailure> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|since| i64::try_from(since.as_micros()).ok())
        .ok_or(OpFailure::Clock)
}

/// `duration` in microseconds (saturating: a lease of centuries is a lease forever).
pub(crate) fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// A stored time back as a `SystemTime`.
pub(crate) fn time(micros: i64) -> Result<SystemTime, OpFailure> {
    u64::try_from(micros)
        .ok()
        .and_then(|m| UNIX_EPOCH.checked_add(Duration::from_micros(m)))
        .ok_or(OpFailure::Corrupt("a time before 1970"))
}
