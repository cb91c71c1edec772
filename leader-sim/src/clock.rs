//! A simulated clock: true time (the simulator's, in µs) seen through a rate error.
//!
//! The engine decides on `Instant`s; a node's instants are one base `Instant` plus the
//! node's reading, so the engine never sees the machine's clock. A pause stops the node,
//! not its clock (a stopped process's monotonic clock runs on).

use std::time::{Duration, Instant};

/// One clock: its rate error and the base its instants count from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SimClock {
    base: Instant,
    drift_ppm: i64,
    /// How far its wall clock is off the true time, µs (the monotonic clock the engine
    /// reads has no offset that matters: only its rate does).
    skew_us: i64,
}

impl SimClock {
    pub(crate) fn new(base: Instant, drift_ppm: i32, skew_us: i64) -> Self {
        SimClock {
            base,
            drift_ppm: i64::from(drift_ppm),
            skew_us,
        }
    }

    /// Steps its wall clock by `us` (its monotonic readings do not move).
    pub(crate) fn step_wall(&mut self, us: i64) {
        self.skew_us = self.skew_us.saturating_add(us);
    }

    /// Its wall clock at true time `t`, µs: what a client would send as its time.
    pub(crate) fn wall_us(&self, t: u64) -> u64 {
        let wall = i128::from(self.local_us(t)) + i128::from(self.skew_us);
        u64::try_from(wall.max(0)).unwrap_or(u64::MAX)
    }

    /// Its wall clock at true time `t`, µs, unclamped (before its zero if a step or an
    /// offset put it there): what a scheduler reads as its time.
    pub(crate) fn wall_signed_us(&self, t: u64) -> i128 {
        i128::from(self.local_us(t)) + i128::from(self.skew_us)
    }

    /// Its reading at true time `t`, µs.
    pub(crate) fn local_us(&self, t: u64) -> u64 {
        let t = i128::from(t);
        let local = t + t * i128::from(self.drift_ppm) / 1_000_000;
        u64::try_from(local.max(0)).unwrap_or(u64::MAX)
    }

    /// Its reading at true time `t`, as an `Instant`.
    pub(crate) fn instant(&self, t: u64) -> Instant {
        self.base + Duration::from_micros(self.local_us(t))
    }

    /// The true time at which it reads `at` (the first µs at or after it).
    pub(crate) fn true_us(&self, at: Instant) -> u64 {
        // The first whole µs of this clock at or after `at` (engine instants carry
        // nanoseconds: a third of a lease).
        let nanos = at.saturating_duration_since(self.base).as_nanos();
        let local = i128::try_from(nanos.div_ceil(1_000)).unwrap_or(i128::MAX / 2);
        let rate = 1_000_000 + i128::from(self.drift_ppm);
        // local = t * rate / 1e6  =>  t = ceil(local * 1e6 / rate)
        let t = (local * 1_000_000 + rate - 1) / rate;
        let mut t = u64::try_from(t.max(0)).unwrap_or(u64::MAX);
        // Rounding: step to the first µs whose reading reaches `local`.
        while t > 0 && i128::from(self.local_us(t - 1)) >= local {
            t -= 1;
        }
        while i128::from(self.local_us(t)) < local {
            t += 1;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_clock_reads_ahead_and_maps_back() {
        let base = Instant::now();
        let fast = SimClock::new(base, 1_000, 0);
        assert_eq!(fast.local_us(1_000_000), 1_001_000);
        assert_eq!(fast.true_us(fast.instant(1_000_000)), 1_000_000);
        let slow = SimClock::new(base, -1_000, 0);
        assert_eq!(slow.local_us(1_000_000), 999_000);
        // One second of a slow clock lasts longer than a true second.
        assert!(slow.true_us(slow.instant(0) + Duration::from_secs(1)) > 1_000_000);
        for t in [0, 1, 999, 123_456_789] {
            assert_eq!(slow.true_us(slow.instant(t)), t);
        }
        // A reading between two µs maps to the later one.
        let between = fast.instant(10) + Duration::from_nanos(400);
        assert!(fast.instant(fast.true_us(between)) >= between);
    }
}
