//! When cycles start: at every multiple of the interval since the Unix epoch.
//!
//! Plain arithmetic, no I/O: the blocking and the async poller only differ in how they wait.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The number of the cycle running at `at`: whole intervals since the Unix epoch.
pub(crate) fn cycle_at(at: SystemTime, interval: Duration) -> u64 {
    let since_epoch = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let cycle = since_epoch.as_nanos() / interval.as_nanos().max(1);
    u64::try_from(cycle).unwrap_or(u64::MAX)
}

/// When cycle `cycle` starts.
pub(crate) fn cycle_start(cycle: u64, interval: Duration) -> SystemTime {
    let nanos = u128::from(cycle) * interval.as_nanos();
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    // The remainder is below 10^9, so it fits.
    let subsec = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    UNIX_EPOCH
        .checked_add(Duration::new(secs, subsec))
        .unwrap_or(UNIX_EPOCH)
}

/// The next cycle to run, and how long to wait for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tick {
    /// The cycle's number.
    pub(crate) cycle: u64,
    /// How long until it starts.
    pub(crate) wait: Duration,
    /// Cycles passed over since the previous tick, because a cycle overran.
    pub(crate) missed: u64,
}

/// Hands out cycle starts, each later than the last.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    interval: Duration,
    last: Option<u64>,
}

impl Schedule {
    pub(crate) fn new(interval: Duration) -> Self {
        Schedule {
            interval,
            last: None,
        }
    }

    /// The first cycle boundary at or after `now` that is later than the previous tick's.
    pub(crate) fn next(&mut self, now: SystemTime) -> Tick {
        let current = cycle_at(now, self.interval);
        let mut cycle = if cycle_start(current, self.interval) == now {
            current
        } else {
            current.saturating_add(1)
        };
        let mut missed = 0;
        if let Some(last) = self.last {
            // Never twice the same cycle, even if the clock went back.
            cycle = cycle.max(last.saturating_add(1));
            missed = cycle - last - 1;
        }
        self.last = Some(cycle);
        let wait = cycle_start(cycle, self.interval)
            .duration_since(now)
            .unwrap_or_default();
        Tick {
            cycle,
            wait,
            missed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn cycles_align_on_multiples_of_the_interval() {
        let interval = Duration::from_millis(100);
        assert_eq!(cycle_at(at(1_234), interval), 12);
        assert_eq!(cycle_start(12, interval), at(1_200));

        let mut schedule = Schedule::new(interval);
        let first = schedule.next(at(1_234));
        assert_eq!(
            (first.cycle, first.wait, first.missed),
            (13, Duration::from_millis(66), 0)
        );
        // On a boundary exactly: that cycle, no wait.
        let mut on_time = Schedule::new(interval);
        assert_eq!(on_time.next(at(1_300)).wait, Duration::ZERO);
    }

    #[test]
    fn an_overrun_skips_cycles_and_counts_them() {
        let mut schedule = Schedule::new(Duration::from_millis(100));
        assert_eq!(schedule.next(at(1_234)).cycle, 13);
        let late = schedule.next(at(1_650));
        assert_eq!((late.cycle, late.missed), (17, 3));
    }

    #[test]
    fn a_clock_going_back_never_repeats_a_cycle() {
        let mut schedule = Schedule::new(Duration::from_millis(100));
        assert_eq!(schedule.next(at(1_234)).cycle, 13);
        let back = schedule.next(at(1_000));
        assert_eq!(back.cycle, 14);
        assert_eq!(back.wait, Duration::from_millis(400));
    }
}
