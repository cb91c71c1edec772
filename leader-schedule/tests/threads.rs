//! The blocking scheduler's threads are its firings in progress, not its jobs: 300 jobs
//! registered, none due, keep the process at a few threads (a thread per job, as it was,
//! made 300). On its own test binary, so no other test's threads are counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(target_os = "linux")]

use std::time::{Duration, UNIX_EPOCH};

use leader_blocking::LeaderElector;
use leader_core::{InMemoryBackend, LeaderElectionOptions, ManualClock, Shutdown};
use leader_schedule::{JobConfig, Schedule, Scheduler};

const JOBS: usize = 300;

/// The threads of this process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn three_hundred_idle_jobs_keep_a_few_threads() {
    let before = threads();
    let elector =
        LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default()).unwrap();
    // On a clock that stands still on 2023-11-14: no tick comes in the test's half second.
    // On the wall clock, a run in the last half second of a year would fire every job.
    let clock = ManualClock::new(UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    let mut scheduler = Scheduler::new(elector).with_clock(clock);
    // Once a year, at midnight on New Year's Day.
    let yearly = JobConfig::new(Schedule::cron("0 0 0 1 1 *").unwrap());
    for job in 0..JOBS {
        scheduler
            .add(&format!("job-{job}"), yearly.clone(), |_| Ok(()))
            .unwrap();
    }
    let shutdown = Shutdown::new();
    let running = shutdown.clone();
    let thread = std::thread::spawn(move || scheduler.run(&running));
    // Long enough for a thread per job to have started, had the scheduler made them.
    std::thread::sleep(Duration::from_millis(500));
    let during = threads();
    shutdown.trigger();
    thread.join().unwrap();
    assert!(
        during <= before + 4,
        "{during} threads with {JOBS} idle jobs ({before} before the scheduler)"
    );
}
