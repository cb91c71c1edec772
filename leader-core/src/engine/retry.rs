//! When to try again: exponential backoff with jitter against a monotonic deadline.

use std::time::{Duration, Instant};

use rand::Rng;

/// Paces the acquire attempts of a waiting elector.
///
/// Delays start at [`Backoff::INITIAL`] and double up to [`Backoff::MAX`]; each one is
/// drawn uniformly from its upper half, so waiters on one lock spread out. The last delay
/// is cut so that the final attempt happens at the deadline.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::__private::Backoff;
///
/// let mut backoff = Backoff::new(Duration::from_millis(50));
/// let first = backoff.next_delay().expect("time is left");
/// assert!(first <= Backoff::INITIAL);
///
/// let mut once = Backoff::new(Duration::ZERO);
/// assert_eq!(once.next_delay(), None); // wait_time zero: try once
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

    /// Backoff for a wait of `wait_time` starting now.
    pub fn new(wait_time: Duration) -> Self {
        Backoff::starting_at(Instant::now(), wait_time)
    }

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

    /// How long to wait before the next attempt, or `None` when the wait is over.
    pub fn next_delay(&mut self) -> Option<Duration> {
        let left = self.deadline.checked_duration_since(Instant::now())?;
        if left.is_zero() {
            return None;
        }
        let upper = self.next;
        self.next = (self.next * 2).min(self.max);
        let jittered = rand::rng().random_range(upper / 2..=upper);
        Some(jittered.min(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_are_capped_and_stop_at_the_deadline() {
        let mut b = Backoff::new(Duration::from_secs(60));
        let delays: Vec<Duration> = (0..12).map(|_| b.next_delay().unwrap()).collect();
        assert!(delays[0] <= Backoff::INITIAL && delays[0] >= Backoff::INITIAL / 2);
        assert!(delays.iter().all(|d| *d <= Backoff::MAX));
        assert!(delays[11] >= Backoff::MAX / 2);

        let mut short = Backoff::new(Duration::from_millis(3));
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(short.next_delay(), None);
        short.extend_until(Instant::now() + Duration::from_secs(60));
        assert!(
            short.next_delay().is_some(),
            "the wait goes on to the new end"
        );
        short.extend_until(Instant::now());
        assert!(short.next_delay().is_some(), "never shortened");
    }
}
