//! When to try again: exponential backoff with jitter against a monotonic deadline, on
//! the instants its caller gives it.

use std::time::{Duration, Instant};

use rand::Rng;

use crate::spi::randomness::seeded;

/// Paces the acquire attempts of a waiting elector.
///
/// Delays start at [`Backoff::INITIAL`] and double up to [`Backoff::MAX`]; each one is
/// drawn uniformly from its upper half, so waiters on one lock spread out. The last delay
/// is cut so that the final attempt happens at the deadline. The jitter comes from the
/// thread's generator, or from [`SeededRandomness`](crate::__private::SeededRandomness)'s
/// while one is set.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use leader_core::__private::Backoff;
///
/// let start = Instant::now();
/// let mut backoff = Backoff::starting_at(start, Duration::from_millis(50));
/// let first = backoff.next_delay(start).expect("time is left");
/// assert!(first <= Backoff::INITIAL);
/// // The wait is over at its deadline, whatever the machine's clock says.
/// assert_eq!(backoff.next_delay(start + Duration::from_millis(50)), None);
///
/// let mut once = Backoff::starting_at(start, Duration::ZERO);
/// assert_eq!(once.next_delay(start), None); // wait_time zero: try once
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    deadline: Instant,
    next: Duration,
    max: Duration,
}

impl Backoff {
    /// The first delay's upper bound.
    pub const INITIAL: Duration = Duration::from_millis(2);
    /// The largest delay between two attempts.
    pub const MAX: Duration = Duration::from_millis(250);

    /// Backoff for a wait of `wait_time` that started at `start`.
    pub fn starting_at(start: Instant, wait_time: Duration) -> Self {
        Backoff::with_bounds(start, wait_time, Self::INITIAL, Self::MAX)
    }

    /// Backoff for a wait of `wait_time` that started at `start`, with delays starting
    /// at `initial` and doubling up to `max`.
    pub fn with_bounds(
        start: Instant,
        wait_time: Duration,
        initial: Duration,
        max: Duration,
    ) -> Self {
        Backoff {
            deadline: start.checked_add(wait_time).unwrap_or(start),
            next: initial,
            max,
        }
    }

    /// Moves the end of the wait to `deadline`, if that is later.
    pub fn extend_until(&mut self, deadline: Instant) {
        self.deadline = self.deadline.max(deadline);
    }

    /// How long to wait, from `now`, before the next attempt, or `None` when the wait is
    /// over at `now`.
    pub fn next_delay(&mut self, now: Instant) -> Option<Duration> {
        let left = self.deadline.checked_duration_since(now)?;
        if left.is_zero() {
            return None;
        }
        let upper = self.next;
        self.next = (self.next * 2).min(self.max);
        let range = upper / 2..=upper;
        let jittered = seeded(|rng| rng.random_range(range.clone()))
            .unwrap_or_else(|| rand::rng().random_range(range));
        Some(jittered.min(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_are_capped_and_stop_at_the_deadline() {
        let start = Instant::now();
        let mut b = Backoff::starting_at(start, Duration::from_secs(60));
        let delays: Vec<Duration> = (0..12).map(|_| b.next_delay(start).unwrap()).collect();
        assert!(delays[0] <= Backoff::INITIAL && delays[0] >= Backoff::INITIAL / 2);
        assert!(delays.iter().all(|d| *d <= Backoff::MAX));
        assert!(delays[11] >= Backoff::MAX / 2);

        let mut short = Backoff::starting_at(start, Duration::from_millis(3));
        let later = start + Duration::from_millis(5);
        assert_eq!(short.next_delay(later), None);
        short.extend_until(later + Duration::from_secs(60));
        assert!(
            short.next_delay(later).is_some(),
            "the wait goes on to the new end"
        );
        short.extend_until(later);
        assert!(short.next_delay(later).is_some(), "never shortened");
    }

    #[test]
    fn the_wait_ends_at_the_given_now_not_at_the_machines_clock() {
        // A wait that starts an hour from now (as the machine's clock goes): only the
        // instants it is given can end it.
        let start = Instant::now() + Duration::from_secs(3600);
        let wait = Duration::from_secs(10);
        let mut b = Backoff::starting_at(start, wait);
        assert_eq!(b.next_delay(start + wait), None, "over at its deadline");
        assert_eq!(b.next_delay(start + wait + Duration::from_millis(1)), None);
        let just_before = start + wait - Duration::from_micros(100);
        assert_eq!(
            b.next_delay(just_before),
            Some(Duration::from_micros(100)),
            "the last delay is cut to the deadline"
        );
        assert!(b.next_delay(start).is_some(), "time is left at the start");
    }
}
