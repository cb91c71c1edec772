//! The renewal driver: every auto-extended lease over one backend is renewed by the same
//! two threads, in batches, and a released lease is renewed no more.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, Error, ExtendOutcome, ForceReleaseOutcome,
    InMemoryBackend, LeaderElectionOptions, LeaderState, Lease, LeaseMode, ListPage, ListRequest,
    LockBackend, LockName, ReleaseEvents, ReleaseOutcome, Renewal,
};
use leader_testkit::wait_until;

/// The in-memory backend, counting renewal calls and renewed leases.
#[derive(Debug, Default)]
struct Counting {
    inner: InMemoryBackend,
    batches: AtomicUsize,
    renewed: AtomicUsize,
}

impl Backend for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }

    fn release_events(&self) -> Option<&ReleaseEvents> {
        self.inner.release_events()
    }
}

impl LockBackend for Counting {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.inner.try_acquire(request)
    }

    fn extend(&self, _: &Lease, _: Duration, _: bool) -> Result<ExtendOutcome, Error> {
        panic!("the driver renews in batches")
    }

    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        self.batches.fetch_add(1, Ordering::SeqCst);
        self.renewed.fetch_add(renewals.len(), Ordering::SeqCst);
        self.inner.extend_batch(renewals)
    }

    fn release(&self, lease: &Lease, min_lease_time: Duration) -> Result<ReleaseOutcome, Error> {
        self.inner.release(lease, min_lease_time)
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.inner.state(key)
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.inner.list(request)
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        self.inner.force_release(key)
    }
}

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
    let backend = Arc::new(Counting::default());
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
    let batches = || backend.batches.load(Ordering::SeqCst);
    wait_until("five renewal rounds", Duration::from_secs(10), || {
        backend.renewed.load(Ordering::SeqCst) >= 5 * guards.len()
    });
    let rounds = started.elapsed().as_secs_f64() / (LEASE / 3).as_secs_f64();
    assert!(
        (batches() as f64) < 3.0 * rounds.ceil() + 3.0,
        "{} batches over about {rounds:.1} renewal intervals: batched, not a call a lease",
        batches()
    );
    assert!(
        guards.iter().all(|guard| !guard.is_lost()),
        "every lease kept"
    );
    let held = elector.state("job-0").unwrap();
    assert!(held.leader().is_some(), "{held:?}");
    assert_eq!(threads_named("leader-renew"), 2);

    // A released lease is renewed no more.
    let renewed_before = backend.renewed.load(Ordering::SeqCst);
    drop(guards);
    std::thread::sleep(LEASE);
    let after_release = backend.renewed.load(Ordering::SeqCst) - renewed_before;
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
