//! Leases that are over before their action starts, and the one rule every elector follows
//! for them.
//!
//! An acquire's answer can arrive after the lease it grants has run out: the process was
//! paused inside the call, the server stalled, the network was slow. The lease's deadline
//! is the one the action would see ([`LeaseContext::deadline`](crate::LeaseContext::deadline)):
//! the send time of the winning request plus `lease_time`, less a thousandth of it (see
//! [`lease_deadline`]), on this node's monotonic clock.
//! Once it has passed, another node may hold the lock, so no action may start on the lease.
//! The same holds for a lease handed out to run later (a batch's lock, a lock guard, a
//! campaign's term) that waited past its deadline.
//!
//! The rule: the action does not start; the lease is released in the background by its
//! owner token, without the minimum lease (the action never ran, so another node may take
//! the lock and run it); the loss is logged at `warn` and counted in
//! `leader_lease_lost_total`; and the caller gets [`Error::LeaseLost`] (transient), after
//! the elector's own retries within `wait_time` where it waits.

use std::time::{Duration, Instant};

use crate::engine::defects::{Defect, planted};
use crate::error::Error;
use crate::name::LockName;
use crate::telemetry::record_lease_lost;

/// The deadline of a lease won (or renewed) by a request sent at `sent_at` for
/// `lease_time`, on this node's monotonic clock: `sent_at + lease_time`, less
/// [`CLOCK_RATE_ALLOWANCE`] of `lease_time`; `None` past the clock's range (never
/// reached).
///
/// The store counts the lease on its own clock from when the request reached it, which
/// is after `sent_at`; that much is safe whatever the clocks read. But the two clocks may
/// run at different rates: a node whose clock runs slow by a fraction `r` of the store's
/// would believe a lease held `r * lease_time` after the store freed it, and a contender
/// can take the lock in between (the simulator found overlaps of up to 4 ms with 30 s
/// leases and clocks 200 ppm apart). So every deadline gives up that much at the end.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use leader_core::__private::lease_deadline;
///
/// let sent_at = Instant::now();
/// let deadline = lease_deadline(sent_at, Duration::from_secs(30));
/// assert_eq!(deadline, Some(sent_at + Duration::from_millis(29_970)));
/// ```
pub fn lease_deadline(sent_at: Instant, lease_time: Duration) -> Option<Instant> {
    if planted(Defect::NoClockRateAllowance) {
        return sent_at.checked_add(lease_time);
    }
    sent_at.checked_add(lease_time.saturating_sub(lease_time / CLOCK_RATE_ALLOWANCE))
}

/// The part of every lease a node gives up at its end, for clocks running at different
/// rates: one thousandth (1,000 ppm), so a node's monotonic clock may run that much
/// slower than the store's (or the store's that much faster) and the node still lets go
/// first. Quartz clocks are within ±100 ppm of true and NTP (ntpd) slews by at most 500
/// ppm; chrony slews faster by default (`maxslewrate` 83,333 ppm): where it runs, set
/// `maxslewrate 500` on the nodes and the store's hosts.
pub const CLOCK_RATE_ALLOWANCE: u32 = 1_000;

/// Whether a lease acquired by a request sent at `sent_at` for `lease_time` is over at
/// `now` (the instant its answer came, read by the caller): its deadline
/// ([`lease_deadline`], monotonic) has passed, so no action may start on it.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use leader_core::__private::is_late;
///
/// let sent_at = Instant::now();
/// let lease_time = Duration::from_secs(30);
/// assert!(!is_late(sent_at, lease_time, sent_at + Duration::from_secs(29)));
/// assert!(is_late(sent_at, lease_time, sent_at + Duration::from_millis(29_970)));
/// ```
pub fn is_late(sent_at: Instant, lease_time: Duration, now: Instant) -> bool {
    if planted(Defect::ActionOnLateLease) {
        return false;
    }
    // A deadline past the clock's range is never reached.
    lease_deadline(sent_at, lease_time).is_some_and(|deadline| now >= deadline)
}

/// A lease on `key` of `backend` ended before its action could start, seen when its
/// acquire was answered (no [`LeaseTracker`](crate::__private::LeaseTracker) holds it
/// yet): counts it in `leader_lease_lost_total` and returns [`lost_before_start`]'s error.
pub(crate) fn answered_late(backend: &'static str, key: &LockName, fencing_token: u64) -> Error {
    record_lease_lost(backend, key.as_str());
    lost_before_start(key, fencing_token)
}

/// Logs at `warn` that the lease on `key` ended before its action could start and returns
/// the error the caller gets: [`Error::LeaseLost`] naming the key. The caller has counted
/// the loss.
pub(crate) fn lost_before_start(key: &LockName, fencing_token: u64) -> Error {
    tracing::warn!(
        lock = %key,
        fencing_token,
        "lease lost before the action started: its deadline passed first; releasing it"
    );
    Error::LeaseLost {
        key: key.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_late_from_its_deadline_on_and_never_past_the_clocks_range() {
        let sent_at = Instant::now();
        assert!(!is_late(sent_at, Duration::from_secs(60), sent_at));
        assert!(is_late(sent_at, Duration::ZERO, sent_at));
        assert!(!is_late(sent_at, Duration::MAX, sent_at));
    }

    #[test]
    fn lateness_follows_the_given_now_not_the_machines_clock() {
        // Sent an hour from now as the machine's clock goes: the real clock is nowhere
        // near the deadline, before or after it.
        let sent_at = Instant::now() + Duration::from_secs(3600);
        let lease_time = Duration::from_secs(30);
        let deadline = lease_deadline(sent_at, lease_time).unwrap();
        assert!(is_late(
            sent_at,
            lease_time,
            deadline + Duration::from_millis(1)
        ));
        assert!(is_late(sent_at, lease_time, deadline));
        assert!(!is_late(
            sent_at,
            lease_time,
            deadline - Duration::from_millis(1)
        ));
        // And long past it as the machine's clock goes: still in time at the given now.
        let long_ago = Instant::now()
            .checked_sub(Duration::from_secs(60))
            .unwrap_or(sent_at);
        assert!(!is_late(
            long_ago,
            lease_time,
            long_ago + Duration::from_secs(1)
        ));
    }

    #[test]
    fn the_error_names_the_key_and_is_transient() {
        let key = LockName::new("job").unwrap();
        let err = answered_late("memory", &key, 7);
        assert!(matches!(&err, Error::LeaseLost { key } if key == "job"));
        assert!(err.is_transient());
    }
}
