//! Lease times in etcd's units (whole seconds of TTL) and timestamps in microseconds.
//!
//! etcd leases count whole seconds, and a cluster grants at least its own minimum TTL
//! (one and a half election timeouts, rounded up: 2 s with etcd's default 1 s election
//! timeout). A lease the caller asks for is therefore rounded **up** to whole seconds, and
//! the cluster may grant more; the [`Lease`](leader_core::Lease) returned says what was
//! granted (`expires_at - acquired_at`), so the lease the caller gets is never shorter
//! than what the store holds, nor silently different from it. Electors keep their own,
//! earlier deadline (the time asked for from when the request was sent), so a rounded-up
//! lease only makes a crashed holder's lock free up to a second later.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leader_core::LeaseTooLong;

use crate::error::OpError;

/// etcd's longest lease TTL (`MaxLeaseTTL`, 9,000,000,000 s, about 285 years).
pub(crate) const MAX_TTL_SECS: i64 = 9_000_000_000;

/// `lease` as the TTL to ask etcd for: whole seconds, rounded up, at least one.
///
/// # Errors
///
/// [`OpError::LeaseTooLong`] beyond etcd's longest TTL: refused rather than cut short.
pub(crate) fn ttl_secs(lease: Duration) -> Result<i64, OpError> {
    let secs = lease
        .as_secs()
        .saturating_add(u64::from(lease.subsec_nanos() > 0));
    i64::try_from(secs.max(1))
        .ok()
        .filter(|secs| *secs <= MAX_TTL_SECS)
        .ok_or(OpError::LeaseTooLong(LeaseTooLong::new(lease)))
}

/// The TTL etcd granted as a duration (a negative or zero answer reads as zero).
pub(crate) fn granted(ttl: i64) -> Duration {
    Duration::from_secs(u64::try_from(ttl).unwrap_or(0))
}

/// Microseconds since the Unix epoch of `at` (0 before it, saturating far after it).
pub(crate) fn micros(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The time `micros` microseconds after the Unix epoch, if the platform can hold it.
pub(crate) fn from_micros(micros: u64) -> Option<SystemTime> {
    UNIX_EPOCH.checked_add(Duration::from_micros(micros))
}

/// `at + by`, or the furthest time the platform holds.
pub(crate) fn later(at: SystemTime, by: Duration) -> SystemTime {
    at.checked_add(by)
        .or_else(|| from_micros(u64::MAX / 2))
        .unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_round_up_to_whole_seconds() {
        for (lease, ttl) in [
            (Duration::from_millis(1), 1),
            (Duration::from_millis(300), 1),
            (Duration::from_secs(1), 1),
            (Duration::from_millis(1001), 2),
            (Duration::from_millis(1500), 2),
            (Duration::from_secs(30), 30),
            (Duration::ZERO, 1),
        ] {
            assert_eq!(ttl_secs(lease).ok(), Some(ttl), "{lease:?}");
        }
    }

    #[test]
    fn a_lease_beyond_etcds_longest_ttl_is_refused() {
        let longest = Duration::from_secs(MAX_TTL_SECS.unsigned_abs());
        assert_eq!(ttl_secs(longest).ok(), Some(MAX_TTL_SECS));
        for lease in [longest + Duration::from_millis(1), Duration::MAX] {
            assert!(matches!(ttl_secs(lease), Err(OpError::LeaseTooLong(l)) if l.lease() == lease));
        }
    }

    #[test]
    fn timestamps_round_trip_in_microseconds() {
        let at = UNIX_EPOCH + Duration::from_micros(1_764_000_000_123_456);
        assert_eq!(from_micros(micros(at)), Some(at));
        assert_eq!(granted(-1), Duration::ZERO);
        assert_eq!(granted(3), Duration::from_secs(3));
    }
}
