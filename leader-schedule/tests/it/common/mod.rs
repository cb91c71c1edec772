//! What the scheduler's tests share: a clock set off from the host's, and a log of runs.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leader_core::Clock;
use leader_schedule::{JobContext, RunKind};
use parking_lot::Mutex;

/// The host's wall clock moved by `offset_ms` (a node whose clock is off).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OffsetClock(pub i64);

impl Clock for OffsetClock {
    fn now(&self) -> SystemTime {
        let now = SystemTime::now();
        if self.0 >= 0 {
            now + Duration::from_millis(self.0.unsigned_abs())
        } else {
            now - Duration::from_millis(self.0.unsigned_abs())
        }
    }

    fn monotonic(&self) -> Instant {
        Instant::now()
    }
}

/// One run a job made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) node: String,
    pub(crate) tick_ms: u64,
    pub(crate) kind: RunKind,
    pub(crate) token: u64,
    pub(crate) start: Instant,
    pub(crate) end: Instant,
}

/// The runs of every node, in the order they ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunLog(Arc<Mutex<Vec<Run>>>);

impl RunLog {
    pub(crate) fn record(&self, node: &str, run: &JobContext, start: Instant) {
        self.0.lock().push(Run {
            node: node.to_owned(),
            tick_ms: millis(run.tick()),
            kind: run.kind(),
            token: run.fencing_token(),
            start,
            end: Instant::now(),
        });
    }

    pub(crate) fn runs(&self) -> Vec<Run> {
        self.0.lock().clone()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.lock().len()
    }
}

pub(crate) fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Checks that `ticks` (one per run) has each tick once and, from the first to the last,
/// no gap of more than `period_ms`.
pub(crate) fn assert_each_tick_once(mut ticks: Vec<u64>, period_ms: u64) {
    ticks.sort_unstable();
    for pair in ticks.windows(2) {
        assert_ne!(pair[0], pair[1], "tick {} ran twice: {ticks:?}", pair[0]);
        assert_eq!(
            pair[1] - pair[0],
            period_ms,
            "a tick between {} and {} did not run: {ticks:?}",
            pair[0],
            pair[1]
        );
    }
}

/// Waits until `done` or `timeout` (then panics naming `what`).
pub(crate) fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
