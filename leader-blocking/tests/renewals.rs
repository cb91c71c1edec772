//! The renewal driver: every auto-extended lease over one backend is renewed by the same
//! two threads, in batches, and a released lease is renewed no more.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leader_blocking::LeaderElector;
use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseMode};
use leader_testkit::{Call, CountingBackend, wait_until};

/// The threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

const LEASE: Duration = Duration::from_millis(600);

/// The tests count the process's renewal threads: one at a time, each once the drivers
/// of the test before it are gone.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    wait_until("no renewal driver left", Duration::from_secs(10), || {
        threads_named("leader-renew") == 0
    });
    one
}

#[test]
fn hundreds_of_leases_are_renewed_by_two_threads_in_batches() {
    let _one = alone();
    let backend = Arc::new(CountingBackend::new(InMemoryBackend::new()));
    let counter = backend.counter();
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector =
        LeaderElector::with_shared_backend(Arc::clone(&backend), options.clone()).unwrap();
    // Another elector over the same backend value shares its driver.
    let other = LeaderElector::with_shared_backend(Arc::clone(&backend), options).unwrap();
    let mode = LeaseMode::Watchdog { timeout: LEASE };
    let started = Instant::now();
    let guards: Vec<_> = (0..300)
        .map(|n| {
            let elector = if n % 2 == 0 { &elector } else { &other };
            elector.acquire(&format!("job-{n}"), mode).unwrap()
        })
        .collect();
    // A thread takes its name once it runs.
    wait_until("the driver's two threads", Duration::from_secs(10), || {
        threads_named("leader-renew") == 2
    });
    let batches = || counter.calls(Call::ExtendBatch);
    let renewed = || counter.locks(Call::ExtendBatch);
    wait_until("five renewal rounds", Duration::from_secs(10), || {
        renewed() >= 5 * guards.len() as u64
    });
    let rounds = started.elapsed().as_secs_f64() / (LEASE / 3).as_secs_f64();
    assert!(
        (batches() as f64) < 3.0 * rounds.ceil() + 3.0,
        "{} batches over about {rounds:.1} renewal intervals: batched, not a call a lease",
        batches()
    );
    assert_eq!(
        counter.calls(Call::Extend),
        0,
        "the driver renews in batches"
    );
    assert!(
        guards.iter().all(|guard| !guard.is_lost()),
        "every lease kept"
    );
    let held = elector.state("job-0").unwrap();
    assert!(held.leader().is_some(), "{held:?}");
    assert_eq!(threads_named("leader-renew"), 2);

    // A released lease is renewed no more.
    let renewed_before = renewed();
    drop(guards);
    std::thread::sleep(LEASE);
    let after_release = renewed() - renewed_before;
    assert!(
        after_release <= 300,
        "at most the batch in flight: {after_release}"
    );
    assert!(elector.state("job-0").unwrap().leader().is_none());
}

#[test]
fn the_driver_goes_away_with_its_last_lease_and_elector() {
    let _one = alone();
    {
        let elector = LeaderElector::new(
            InMemoryBackend::new(),
            LeaderElectionOptions::default().with_wait_time(Duration::ZERO),
        )
        .unwrap();
        let guard = elector
            .acquire("job", LeaseMode::Watchdog { timeout: LEASE })
            .unwrap();
        wait_until("the driver's two threads", Duration::from_secs(10), || {
            threads_named("leader-renew") == 2
        });
        std::thread::sleep(LEASE);
        assert!(!guard.is_lost());
    }
    wait_until("the driver's threads end", Duration::from_secs(10), || {
        threads_named("leader-renew") == 0
    });
}
