//! [`RenewalSchedule`]: when an auto-extended lease is renewed, for every elector.

use std::time::{Duration, Instant};

/// When an auto-extended lease is next renewed: one renew interval after the request that
/// last secured it was sent — the acquire first, then each renewal that was answered in
/// time.
///
/// The lease's deadline counts from the same instants (see
/// [`LeaseContext::deadline`](crate::LeaseContext::deadline)), so the schedule keeps
/// `lease_time - interval` (two thirds of the lease by default) between a renewal being
/// due and the lease running out, however late the holder starts using the lease: a lease
/// won in a batch whose action starts later is renewed on the lease's own schedule, and one
/// already past due is renewed at once. Electors sleep until [`due`](Self::due), renew,
/// and call [`renewed`](Self::renewed) with the instant that renewal was sent.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use leader_core::__private::RenewalSchedule;
///
/// let interval = Duration::from_secs(10);
/// let acquire_sent = Instant::now();
/// let mut schedule = RenewalSchedule::new(acquire_sent, interval);
/// assert_eq!(schedule.due(), acquire_sent + interval);
///
/// // The renewal went out 2 s late; the next one is due an interval after it was sent.
/// let renewal_sent = acquire_sent + interval + Duration::from_secs(2);
/// schedule.renewed(renewal_sent);
/// assert_eq!(schedule.due(), renewal_sent + interval);
///
/// // A batch of renewals takes along the leases due within half an interval of it.
/// assert!(schedule.joins_batch_at(renewal_sent + interval / 2));
/// assert!(!schedule.joins_batch_at(renewal_sent + interval / 4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenewalSchedule {
    interval: Duration,
    due: Instant,
}

impl RenewalSchedule {
    /// The schedule of a lease whose acquire request was sent at `sent_at`, renewed every
    /// `interval`.
    pub fn new(sent_at: Instant, interval: Duration) -> Self {
        RenewalSchedule {
            interval,
            due: later(sent_at, interval),
        }
    }

    /// When the next renewal is due: possibly in the past, when it is to be sent at once.
    pub fn due(&self) -> Instant {
        self.due
    }

    /// The renew interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// A renewal sent at `sent_at` was answered in time: the next is due one interval
    /// after it was sent.
    pub fn renewed(&mut self, sent_at: Instant) {
        self.due = later(sent_at, self.interval);
    }

    /// Whether a batch of renewals sent at `at` takes this lease along: it is due by then,
    /// or within half an interval after, so that leases fall into a few cohorts renewed
    /// together rather than one call each.
    pub fn joins_batch_at(&self, at: Instant) -> bool {
        self.due <= later(at, self.interval / 2)
    }
}

/// `at + by`, or `at` should that not fit an `Instant` (an interval of a century).
fn later(at: Instant, by: Duration) -> Instant {
    at.checked_add(by).unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_one_interval_after_each_request_was_sent() {
        let start = Instant::now();
        let interval = Duration::from_millis(300);
        let mut schedule = RenewalSchedule::new(start, interval);
        assert_eq!(schedule.due(), start + interval);
        assert_eq!(schedule.interval(), interval);
        let sent = start + Duration::from_millis(310);
        schedule.renewed(sent);
        assert_eq!(schedule.due(), sent + interval);
    }

    #[test]
    fn a_lease_taken_long_ago_is_due_at_once() {
        let interval = Duration::from_millis(300);
        let Some(taken) = Instant::now().checked_sub(Duration::from_secs(1)) else {
            return;
        };
        let schedule = RenewalSchedule::new(taken, interval);
        assert!(schedule.due() <= Instant::now());
        assert!(schedule.joins_batch_at(Instant::now()));
    }

    #[test]
    fn a_batch_takes_leases_due_within_half_an_interval() {
        let start = Instant::now();
        let interval = Duration::from_millis(300);
        let schedule = RenewalSchedule::new(start, interval);
        assert!(schedule.joins_batch_at(start + interval / 2));
        assert!(!schedule.joins_batch_at(start + interval / 2 - Duration::from_millis(1)));
    }

    #[test]
    fn an_interval_that_does_not_fit_never_overflows() {
        let start = Instant::now();
        let schedule = RenewalSchedule::new(start, Duration::MAX);
        assert_eq!(schedule.due(), start);
    }
}
