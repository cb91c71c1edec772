//! The blocking tenant poller on the in-memory backend: exactly once per cycle across
//! instances, isolation of failures, bounded concurrency, tenants coming and going, and
//! graceful shutdown.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, RwLock};
use std::time::{Duration, Instant};

use crate::common::{
    INTERVAL, Runs, assert_one_winner_per_tenant, manual_backend, options, tenants,
};
use leader_blocking::{LeaderElector, ThreadPoolLeaderElector};
use leader_core::{Error, InMemoryBackend, LeaseContext, LockBackend, LockStatus, ManualClock};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_tenant::{
    BlockingTenantPoller, FallibleSource, JobFailure, OutcomeKind, PollerConfig, Shutdown,
    ShutdownMode, TenantError, TenantId, TenantIdError, TenantOutcome,
};
use leader_testkit::wait_until;

type Job = Box<dyn Fn(TenantId, &LeaseContext) -> Result<u32, String> + Send + Sync>;
type Source = Box<dyn Fn() -> Vec<String> + Send + Sync>;
type Poller = BlockingTenantPoller<InMemoryBackend, Source, Job>;

fn counting_job(runs: &Runs, work: Duration) -> Job {
    let runs = runs.clone();
    Box::new(move |tenant, _lease| {
        runs.record(&tenant);
        std::thread::sleep(work);
        Ok(1)
    })
}

fn instances(
    (backend, clock): &(InMemoryBackend, ManualClock),
    config: &PollerConfig,
    names: &[String],
    job: impl Fn() -> Job,
) -> Vec<Poller> {
    (0..3)
        .map(|i| {
            let pool =
                ThreadPoolLeaderElector::new(backend.clone(), options(&format!("node-{i}")), 4)
                    .unwrap();
            let names = names.to_vec();
            let source: Source = Box::new(move || names.clone());
            BlockingTenantPoller::new(&pool, config.clone(), source, job())
                .unwrap()
                .with_clock(clock.clone())
        })
        .collect()
}

#[test]
fn three_instances_fifty_tenants_run_each_job_exactly_once_per_cycle() {
    let store = manual_backend();
    let clock = store.1.clone();
    let names = tenants(50);
    let runs = Runs::default();
    let config = PollerConfig::new("sync", INTERVAL).with_concurrency(4);
    let pollers = instances(&store, &config, &names, || {
        counting_job(&runs, Duration::from_micros(200))
    });

    for round in 0..5 {
        runs.set_round(round);
        let start = Barrier::new(pollers.len());
        let reports: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = pollers
                .iter()
                .map(|poller| {
                    let start = &start;
                    s.spawn(move || {
                        start.wait();
                        poller.run_cycle()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        runs.assert_exactly_once(round, &names);
        assert_one_winner_per_tenant(&reports, &names);
        let elected: usize = reports.iter().map(|r| r.count(OutcomeKind::Elected)).sum();
        assert_eq!(elected, 50, "round {round}");
        clock.advance(INTERVAL);
    }
}

/// Runs the three instances one after the other, `offset` apart within each interval.
fn staggered_rounds(config: &PollerConfig, rounds: u64) -> (Runs, Vec<String>) {
    let store = manual_backend();
    let clock = store.1.clone();
    let names = tenants(50);
    let runs = Runs::default();
    let pollers = instances(&store, config, &names, || {
        counting_job(&runs, Duration::ZERO)
    });
    let offset = INTERVAL / 3;
    for round in 0..rounds {
        runs.set_round(round);
        // Rotate which instance comes first, so every instance wins some rounds.
        for i in 0..pollers.len() {
            let poller = &pollers[(i + round as usize) % pollers.len()];
            let report = poller.run_cycle();
            assert_eq!(report.tenants.len(), 50);
            clock.advance(offset);
        }
    }
    (runs, names)
}

#[test]
fn instances_whose_cycles_are_not_aligned_still_run_each_job_once_per_cycle() {
    let config = PollerConfig::new("sync", INTERVAL);
    let (runs, names) = staggered_rounds(&config, 4);
    for round in 0..4 {
        runs.assert_exactly_once(round, &names);
    }
}

#[test]
fn without_the_min_lease_a_late_instance_runs_the_job_again() {
    let config = PollerConfig::new("sync", INTERVAL).with_min_lease_time(Duration::ZERO);
    let (runs, names) = staggered_rounds(&config, 2);
    for round in 0..2 {
        for tenant in &names {
            assert_eq!(
                runs.count(round, tenant),
                3,
                "the guard is what prevents this"
            );
        }
    }
}

#[test]
fn a_late_run_never_blocks_the_next_cycle_and_a_lock_won_inside_the_guard_runs_nothing() {
    let store = manual_backend();
    let clock = store.1.clone();
    let config = PollerConfig::new("sync", INTERVAL);
    let names = tenants(1);
    let runs = Runs::default();
    let mut pollers = instances(&store, &config, &names, || {
        counting_job(&runs, Duration::ZERO)
    });
    let (a, b) = (pollers.remove(0), pollers.remove(0));
    let elected = |poller: &Poller| poller.run_cycle().count(OutcomeKind::Elected);

    // Cycle 0: A reaches the tenant 50 s in; B, 58 s in, skips.
    clock.advance(Duration::from_secs(50));
    assert_eq!(elected(&a), 1);
    clock.advance(Duration::from_secs(8));
    assert_eq!(elected(&b), 0);
    // Cycle 1: reaching it at once is fine, the lock ended 1 s before the boundary.
    clock.advance(Duration::from_secs(2));
    assert_eq!(elected(&b), 1);
    // An instance reaching it inside the guard (the last second of the cycle, an overrun
    // of nearly a whole interval) wins a lock B's minimum lease no longer holds: it must
    // not run the job a second time this cycle. It skips, and frees the lock at once.
    clock.advance(Duration::from_millis(59_500));
    let late = a.run_cycle();
    assert_eq!(late.count(OutcomeKind::Elected), 0, "{late}");
    assert_eq!(late.count(OutcomeKind::Skipped), 1, "{late}");
    assert_eq!(
        runs.count(0, "tenant-000"),
        2,
        "the job ran once per cycle, twice"
    );
    // Freed in the background, without the minimum lease: the manual clock does not move
    // while it waits, so only the release can free it.
    let observer = LeaderElector::new(store.0.clone(), options("observer")).unwrap();
    let tenant = observer.for_tenant("tenant-000").unwrap();
    wait_until("the late lock to be freed", Duration::from_secs(10), || {
        tenant.state("sync").unwrap().status() == LockStatus::Empty
    });
    // The next cycle runs it, at once.
    clock.advance(Duration::from_millis(600));
    assert_eq!(elected(&b), 1);
    assert_eq!(runs.count(0, "tenant-000"), 3);
}

#[test]
fn a_failing_or_panicking_tenant_does_not_affect_the_others() {
    let backend = InMemoryBackend::new();
    let pool = ThreadPoolLeaderElector::new(backend.clone(), options("node"), 3).unwrap();
    let config = PollerConfig::new("sync", INTERVAL)
        .with_concurrency(3)
        .with_min_lease_time(Duration::ZERO);
    let names = tenants(10);
    let source = {
        let names = names.clone();
        move || names.clone()
    };
    let job = |tenant: TenantId, _lease: &LeaseContext| match tenant.as_str() {
        "tenant-003" => panic!("tenant 3 is broken"),
        "tenant-005" => Err(format!("{tenant} has no invoices table")),
        _ => Ok(tenant.as_str().len()),
    };
    let poller = BlockingTenantPoller::new(&pool, config, source, job).unwrap();

    for _ in 0..2 {
        let report = poller.run_cycle();
        assert_eq!(report.count(OutcomeKind::Elected), 8, "{report}");
        match &report.tenant("tenant-003").unwrap().outcome {
            TenantOutcome::Failed(JobFailure::Panicked(message)) => {
                assert_eq!(message, "tenant 3 is broken");
            }
            other => panic!("expected a panic, got {other:?}"),
        }
        match &report.tenant("tenant-005").unwrap().outcome {
            TenantOutcome::Failed(JobFailure::Error(error)) => assert!(error.contains("invoices")),
            other => panic!("expected an error, got {other:?}"),
        }
        assert!(!report.interrupted);
        // The panicking tenant's lease was released (no min lease here).
        let observer = LeaderElector::new(backend.clone(), options("observer")).unwrap();
        let state = observer
            .for_tenant("tenant-003")
            .unwrap()
            .state("sync")
            .unwrap();
        assert_eq!(state.status(), LockStatus::Empty);
    }
}

#[test]
fn a_task_that_waited_for_a_busy_pool_still_frees_its_lock_before_the_cycle_ends() {
    let (backend, clock) = manual_backend();
    clock.advance(Duration::from_secs(1));
    // One worker, two tenants handed over at once: `b` waits while `a`'s job takes half
    // the cycle (on the manual clock).
    let pool = ThreadPoolLeaderElector::new(backend.clone(), options("node"), 1).unwrap();
    let observer = LeaderElector::new(backend, options("observer")).unwrap();
    let config = PollerConfig::new("sync", INTERVAL).with_concurrency(2);
    let job = {
        let clock = clock.clone();
        move |tenant: TenantId, _lease: &LeaseContext| {
            if tenant.as_str() == "a" {
                clock.advance(INTERVAL / 2);
            }
            Ok::<_, String>(())
        }
    };
    let poller = BlockingTenantPoller::new(&pool, config, || ["a", "b"], job)
        .unwrap()
        .with_clock(clock.clone());
    for cycle in 0..3 {
        let report = poller.run_cycle();
        assert_eq!(report.count(OutcomeKind::Elected), 2, "cycle {cycle}");
        // On to the next cycle, one second in: both locks are free again.
        clock.advance(INTERVAL / 2);
        for tenant in ["a", "b"] {
            let state = observer.for_tenant(tenant).unwrap().state("sync").unwrap();
            assert_eq!(
                state.status(),
                LockStatus::Empty,
                "cycle {cycle}: {tenant}'s lock outlived its cycle: {state:?}"
            );
        }
    }
}

#[test]
fn at_most_concurrency_jobs_run_at_once() {
    let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), options("node"), 8).unwrap();
    // On the wall clock: a plain lease, so no cycle falls in the guard before a
    // cycle's end (where every tenant is skipped).
    let config = PollerConfig::new("sync", INTERVAL)
        .with_concurrency(3)
        .with_min_lease_time(Duration::ZERO);
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let job = {
        let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
        move |_tenant: TenantId, _lease: &LeaseContext| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
            running.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, String>(())
        }
    };
    let names = tenants(24);
    let poller = BlockingTenantPoller::new(&pool, config, move || names.clone(), job).unwrap();
    let report = poller.run_cycle();
    assert_eq!(report.count(OutcomeKind::Elected), 24);
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        (2..=3).contains(&peak),
        "peak {peak}: bounded by 3, and concurrent"
    );
}

/// A pool that is shut down runs no job: each won tenant's outcome is the pool's
/// `ShutDown` error, and its lock is released at once, for another instance to take.
#[test]
fn on_a_shut_down_pool_no_job_runs_and_every_won_lock_is_freed() {
    let backend = InMemoryBackend::new();
    let pool = ThreadPoolLeaderElector::new(backend.clone(), options("node"), 2).unwrap();
    // On the wall clock: a plain lease, so no cycle falls in the guard before a
    // cycle's end (where every tenant is skipped).
    let config = PollerConfig::new("sync", INTERVAL)
        .with_concurrency(2)
        .with_min_lease_time(Duration::ZERO);
    let ran = Arc::new(AtomicUsize::new(0));
    let job = {
        let ran = Arc::clone(&ran);
        move |_tenant: TenantId, _lease: &LeaseContext| {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(())
        }
    };
    let names = tenants(5);
    let source = {
        let names = names.clone();
        move || names.clone()
    };
    let poller = BlockingTenantPoller::new(&pool, config, source, job).unwrap();
    pool.shutdown();
    let report = poller.run_cycle();
    assert_eq!(ran.load(Ordering::SeqCst), 0, "no job ran: {report}");
    assert_eq!(report.count(OutcomeKind::Error), 5, "{report}");
    for line in &report.tenants {
        assert!(
            matches!(
                line.outcome,
                TenantOutcome::Error(TenantError::Elector(Error::ShutDown))
            ),
            "{line:?}"
        );
    }
    let elector = LeaderElector::new(backend, options("other")).unwrap();
    for name in &names {
        let state = elector.for_tenant(name).unwrap().state("sync").unwrap();
        assert!(state.leader().is_none(), "{name}'s lock was freed");
    }
}

#[test]
fn tenants_come_and_go_between_cycles_and_bad_ids_are_reported() {
    let (backend, clock) = manual_backend();
    let pool = ThreadPoolLeaderElector::new(backend, options("node"), 2).unwrap();
    let poller_clock = clock.clone();
    let live = Arc::new(RwLock::new(vec!["acme".to_owned(), "globex".to_owned()]));
    let source = {
        let live = Arc::clone(&live);
        move || live.read().unwrap().clone()
    };
    let job = |tenant: TenantId, _lease: &LeaseContext| Ok::<_, String>(tenant);
    let poller = BlockingTenantPoller::new(&pool, PollerConfig::new("sync", INTERVAL), source, job)
        .unwrap()
        .with_clock(poller_clock);

    let first = poller.run_cycle();
    let seen: Vec<_> = first.tenants.iter().map(|t| t.tenant.as_str()).collect();
    assert_eq!(seen, ["acme", "globex"]);

    *live.write().unwrap() = ["globex", "initech", "initech", "eu:acme"]
        .map(str::to_owned)
        .to_vec();
    clock.advance(INTERVAL);
    let second = poller.run_cycle();
    let seen: Vec<_> = second.tenants.iter().map(|t| t.tenant.as_str()).collect();
    assert_eq!(
        seen,
        ["globex", "initech", "eu:acme"],
        "repeats are served once"
    );
    assert_eq!(second.count(OutcomeKind::Elected), 2);
    assert!(matches!(
        second.tenant("eu:acme").unwrap().outcome,
        TenantOutcome::Error(TenantError::Id(TenantIdError::Colon { index: 2 }))
    ));
}

#[test]
fn a_failing_source_yields_a_report_with_the_error() {
    let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), options("node"), 1).unwrap();
    let source = FallibleSource(|| Err::<Vec<String>, _>(std::io::Error::other("db down")));
    let job = |_t: TenantId, _lease: &LeaseContext| Ok::<_, String>(());
    let poller =
        BlockingTenantPoller::new(&pool, PollerConfig::new("sync", INTERVAL), source, job).unwrap();
    let report = poller.run_cycle();
    assert!(report.tenants.is_empty());
    assert!(matches!(report.source_error, Some(TenantError::Source(_))));
    assert!(report.to_string().contains("db down"));
}

/// A poller whose jobs block until `gate` fires; `started` counts the jobs that began.
/// Opens the gate when dropped: a failed assertion then unwinds instead of waiting
/// forever for the gated jobs (the thread scope joins them, the pool's drop waits for them).
struct OpenOnDrop<'a>(&'a Shutdown);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.trigger();
    }
}

fn gated_poller<B: LockBackend + Clone + 'static>(
    backend: &B,
    mode: ShutdownMode,
    gate: &Shutdown,
    started: &Arc<AtomicUsize>,
) -> BlockingTenantPoller<B, Source, Job> {
    let pool = ThreadPoolLeaderElector::new(backend.clone(), options("node"), 2).unwrap();
    // No concurrency set: as many lanes as the pool has workers run the jobs, so the four
    // tenants beyond them wait in the cycle's queue, the poller's to withhold at shutdown.
    let config = PollerConfig::new("sync", INTERVAL)
        .with_min_lease_time(Duration::ZERO)
        .with_shutdown_mode(mode);
    let (gate, started) = (gate.clone(), Arc::clone(started));
    let job: Job = Box::new(move |_tenant, _lease| {
        started.fetch_add(1, Ordering::SeqCst);
        futures_lite::future::block_on(gate.triggered());
        Ok(1)
    });
    let names = tenants(6);
    let source: Source = Box::new(move || names.clone());
    let poller = BlockingTenantPoller::new(&pool, config, source, job).unwrap();
    assert_eq!(poller.concurrency(), pool.workers());
    poller
}

#[test]
fn shutdown_in_finish_mode_waits_for_jobs_in_flight_and_starts_no_more() {
    let backend = InMemoryBackend::new();
    let (gate, shutdown, started) = (Shutdown::new(), Shutdown::new(), Arc::default());
    let poller = gated_poller(&backend, ShutdownMode::Finish, &gate, &started);
    // Declared after the poller, so dropped first: the pool's drop waits for the jobs.
    let _open = OpenOnDrop(&gate);
    let report = std::thread::scope(|s| {
        let cycle = s.spawn(|| poller.run_cycle_until(&shutdown));
        wait_until("two jobs to start", Duration::from_secs(10), || {
            started.load(Ordering::SeqCst) == 2
        });
        shutdown.trigger();
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !cycle.is_finished(),
            "finish mode waits for the jobs in flight"
        );
        gate.trigger();
        cycle.join().unwrap()
    });
    assert_eq!(report.count(OutcomeKind::Elected), 2, "{report}");
    assert_eq!(report.count(OutcomeKind::NotStarted), 4);
    assert!(report.interrupted);
    assert_eq!(started.load(Ordering::SeqCst), 2);
}

#[test]
fn shutdown_in_abandon_mode_returns_at_once_frees_the_unstarted_and_releases_the_rest_later() {
    let backend = InMemoryBackend::new();
    let (gate, shutdown, started) = (Shutdown::new(), Shutdown::new(), Arc::default());
    let poller = gated_poller(&backend, ShutdownMode::Abandon, &gate, &started);
    // Declared after the poller, so dropped first: the pool's drop waits for the jobs.
    let _open = OpenOnDrop(&gate);
    let report = std::thread::scope(|s| {
        let cycle = s.spawn(|| poller.run_cycle_until(&shutdown));
        wait_until("two jobs to start", Duration::from_secs(10), || {
            started.load(Ordering::SeqCst) == 2
        });
        shutdown.trigger();
        cycle.join().unwrap()
    });
    assert_eq!(report.count(OutcomeKind::Abandoned), 2, "{report}");
    assert_eq!(report.count(OutcomeKind::NotStarted), 4);

    let observer = LeaderElector::new(backend, options("observer")).unwrap();
    let held = |tenant: &str| {
        let tenant = observer.for_tenant(tenant).unwrap();
        tenant.state("sync").unwrap().status() == LockStatus::Occupied
    };
    let abandoned: Vec<_> = report
        .tenants
        .iter()
        .filter(|t| t.outcome.kind() == OutcomeKind::Abandoned)
        .map(|t| t.tenant.clone())
        .collect();
    let running_held = abandoned.iter().all(|t| held(t));
    let not_started: Vec<_> = report
        .tenants
        .iter()
        .filter(|t| t.outcome.kind() == OutcomeKind::NotStarted)
        .map(|t| t.tenant.clone())
        .collect();
    assert!(running_held, "still running on the workers");
    assert_eq!(not_started.len(), 4);
    // Won in the same batch, the tenants that never started are freed in the background
    // (the cycle does not wait for the store), while the workers are still busy with the
    // abandoned jobs.
    wait_until(
        "the unstarted tenants' locks to be freed",
        Duration::from_secs(10),
        || !not_started.iter().any(|t| held(t)),
    );
    gate.trigger();
    wait_until(
        "the abandoned jobs' leases to be released",
        Duration::from_secs(10),
        || abandoned.iter().all(|t| !held(t)),
    );
}

#[test]
fn shutdown_in_abandon_mode_does_not_wait_for_a_stalled_store_to_free_the_unstarted() {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let (gate, shutdown, started) = (Shutdown::new(), Shutdown::new(), Arc::default());
    let poller = gated_poller(&backend, ShutdownMode::Abandon, &gate, &started);
    // Declared after the poller, so dropped first: the pool's drop waits for the jobs.
    let _open = OpenOnDrop(&gate);
    let (returned, report) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            // Not received if the test gave up waiting for it.
            let _unreceived = returned.send(poller.run_cycle_until(&shutdown));
        });
        wait_until("two jobs to start", Duration::from_secs(10), || {
            started.load(Ordering::SeqCst) == 2
        });
        // The store stops answering releases as the poller shuts down.
        backend.set(Op::Release, Fault::Stall);
        shutdown.trigger();
        let report = report.recv_timeout(Duration::from_secs(10));
        // Whatever happened, the store answers again, so the cycle's thread can end.
        backend.clear(Op::Release);
        let report = report.expect("the cycle returns while the releases stall");
        assert_eq!(report.count(OutcomeKind::Abandoned), 2, "{report}");
        assert_eq!(report.count(OutcomeKind::NotStarted), 4, "{report}");
        let observer = LeaderElector::new(backend.inner().clone(), options("observer")).unwrap();
        wait_until(
            "the unstarted tenants' locks to be freed once the store answers",
            Duration::from_secs(10),
            || {
                report
                    .tenants
                    .iter()
                    .filter(|t| t.outcome.kind() == OutcomeKind::NotStarted)
                    .all(|t| {
                        let tenant = observer.for_tenant(&t.tenant).unwrap();
                        tenant.state("sync").unwrap().status() != LockStatus::Occupied
                    })
            },
        );
    });
}

#[test]
fn run_stops_while_waiting_for_the_next_cycle() {
    let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), options("node"), 1).unwrap();
    let config = PollerConfig::new("sync", Duration::from_secs(3600));
    let job = |_t: TenantId, _lease: &LeaseContext| Ok::<_, String>(());
    // The next cycle is 3599 s away on this clock; on the wall clock, a run started within
    // 50 ms of an hour's end would run a cycle before the shutdown.
    let clock = common::clock_into_cycle(Duration::from_secs(3600), Duration::from_secs(1));
    let poller = BlockingTenantPoller::new(&pool, config, || ["acme"], job)
        .unwrap()
        .with_clock(clock);
    let shutdown = Shutdown::new();
    let mut reports = 0;
    let started = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            shutdown.trigger();
        });
        poller.run(&shutdown, |_| reports += 1);
    });
    assert_eq!(reports, 0);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn run_starts_cycles_on_multiples_of_the_interval() {
    let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), options("node"), 2).unwrap();
    let interval = Duration::from_millis(400);
    let config = PollerConfig::new("sync", interval);
    let job = |_t: TenantId, _lease: &LeaseContext| Ok::<_, String>(());
    let poller = BlockingTenantPoller::new(&pool, config, || ["acme", "globex"], job).unwrap();
    let shutdown = Shutdown::new();
    let mut reports = Vec::new();
    poller.run(&shutdown, |report| {
        reports.push(report);
        if reports.len() == 3 {
            shutdown.trigger();
        }
    });
    for report in &reports {
        assert_eq!(report.count(OutcomeKind::Elected), 2, "{report}");
        let since_epoch = report
            .started_at
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let into_cycle = since_epoch.as_nanos() % interval.as_nanos();
        assert!(
            into_cycle < (interval / 2).as_nanos(),
            "{into_cycle} ns late"
        );
        assert_eq!(
            report.cycle as u128,
            since_epoch.as_nanos() / interval.as_nanos()
        );
    }
    assert!(reports.windows(2).all(|w| w[0].cycle < w[1].cycle));
}

#[test]
fn a_scoped_pool_or_a_bad_config_is_refused() {
    let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), options("node"), 1).unwrap();
    let job = |_t: TenantId, _lease: &LeaseContext| Ok::<_, String>(());
    let scoped = pool.for_tenant("acme").unwrap();
    let config = PollerConfig::new("sync", INTERVAL);
    assert!(matches!(
        BlockingTenantPoller::new(&scoped, config, || ["a"], job),
        Err(TenantError::Elector(Error::AlreadyScoped { .. }))
    ));
    let bad = PollerConfig::new("sy{nc}", INTERVAL);
    assert!(matches!(
        BlockingTenantPoller::new(&pool, bad, || ["a"], job),
        Err(TenantError::Name(_))
    ));
}

#[test]
fn three_scheduled_instances_run_each_job_exactly_once_per_cycle() {
    let backend = InMemoryBackend::new();
    let pools = (0..3)
        .map(|i| {
            ThreadPoolLeaderElector::new(backend.clone(), options(&format!("node-{i}")), 4).unwrap()
        })
        .collect();
    common::scheduled_instances_run_each_job_once(
        pools,
        "sync",
        &tenants(50),
        Duration::from_millis(500),
        3,
    );
}

#[test]
fn each_job_runs_under_its_tenants_lease_and_sees_its_fencing_token() {
    let (backend, clock) = manual_backend();
    let pool = ThreadPoolLeaderElector::new(backend.clone(), options("node"), 2).unwrap();
    let job = move |tenant: TenantId, lease: &LeaseContext| {
        Ok::<_, String>(common::see_lease(&backend, &tenant, "sync", lease))
    };
    let poller = BlockingTenantPoller::new(
        &pool,
        PollerConfig::new("sync", INTERVAL),
        || ["acme", "globex"],
        job,
    )
    .unwrap()
    .with_clock(clock.clone());
    let mut tokens = std::collections::HashMap::new();
    for _ in 0..3 {
        common::assert_jobs_ran_under_their_leases(&poller.run_cycle(), &mut tokens);
        clock.advance(INTERVAL);
    }
}

#[test]
fn won_tenants_that_shutdown_keeps_from_starting_are_freed_at_once_without_the_min_lease() {
    let (backend, clock) = manual_backend();
    let pool = ThreadPoolLeaderElector::new(backend.clone(), options("node"), 1).unwrap();
    // One batch takes all six tenants' locks; one worker runs them in turn, and the first
    // job triggers the shutdown. The default minimum lease keeps a run's lock to the
    // cycle's end; the five never started must not be kept.
    let config = PollerConfig::new("sync", INTERVAL).with_acquire_batch(64);
    let shutdown = Shutdown::new();
    let job = {
        let shutdown = shutdown.clone();
        move |_tenant: TenantId, _lease: &LeaseContext| {
            shutdown.trigger();
            Ok::<_, String>(())
        }
    };
    // On the backend's clock, which stands at a cycle's start: on the wall clock, a cycle
    // run in the last second of a minute (the guard before its end) would skip every tenant.
    let poller = BlockingTenantPoller::new(&pool, config, || tenants(6), job)
        .unwrap()
        .with_clock(clock);
    let report = poller.run_cycle_until(&shutdown);
    assert_eq!(report.count(OutcomeKind::Elected), 1, "{report}");
    assert_eq!(report.count(OutcomeKind::NotStarted), 5, "{report}");
    // The five are freed in the background, without the minimum lease (the manual clock
    // does not move: only their release can free them); the run keeps its lock.
    let observer = LeaderElector::new(backend, options("observer")).unwrap();
    let occupied = |tenant: &str| {
        let state = observer.for_tenant(tenant).unwrap().state("sync");
        state.unwrap().status() == LockStatus::Occupied
    };
    let (kept, unstarted): (Vec<_>, Vec<_>) = report
        .tenants
        .iter()
        .partition(|line| line.outcome.kind() == OutcomeKind::Elected);
    wait_until("the unstarted to be freed", Duration::from_secs(10), || {
        unstarted.iter().all(|line| !occupied(&line.tenant))
    });
    assert!(kept.iter().all(|line| occupied(&line.tenant)), "{report}");
}

#[test]
fn a_won_tenant_whose_lease_ran_out_while_it_waited_is_acquired_again_before_its_job() {
    let backend = InMemoryBackend::new();
    let options = options("node").with_lease_time(Duration::from_millis(300));
    let pool = ThreadPoolLeaderElector::new(backend, options, 1).unwrap();
    // One batch wins all three; the first job outlasts the others' leases (no minimum
    // lease stretches them), so their jobs must not start on the batch's leases.
    let config = PollerConfig::new("sync", INTERVAL)
        .with_min_lease_time(Duration::ZERO)
        .with_acquire_batch(64);
    let job = |tenant: TenantId, lease: &LeaseContext| {
        let lost_at_start = lease.is_lost();
        if tenant.as_str() == "tenant-000" {
            std::thread::sleep(Duration::from_millis(600));
        }
        Ok::<_, String>((lost_at_start, lease.fencing_token()))
    };
    let poller = BlockingTenantPoller::new(&pool, config, || tenants(3), job).unwrap();
    let report = poller.run_cycle();
    assert_eq!(report.count(OutcomeKind::Elected), 3, "{report}");
    for line in &report.tenants {
        let TenantOutcome::Elected {
            value: (lost_at_start, _),
            ..
        } = &line.outcome
        else {
            panic!("{report}");
        };
        assert!(
            !lost_at_start,
            "{} started on an expired lease",
            line.tenant
        );
    }
}
