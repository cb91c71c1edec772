//! The async tenant poller on the in-memory backend, each test on tokio (multi-thread) and
//! on smol: exactly once per cycle across instances, isolation of failures, bounded
//! concurrency, graceful shutdown.

use crate::common;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{
    INTERVAL, Runs, assert_one_winner_per_tenant, manual_backend, options, tenants,
};
use leader_async::AsyncLeaderElector;
use leader_blocking::LeaderElector;
use leader_core::{InMemoryBackend, LeaseContext, LockStatus};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_tenant::{
    AsyncTenantPoller, JobFailure, OutcomeKind, PollerConfig, Shutdown, ShutdownMode, TenantId,
    TenantOutcome,
};

/// Runs the same test body on a tokio multi-thread runtime and on smol.
fn on_each_runtime<F: Future<Output = ()>>(body: impl Fn() -> F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(body());
    smol::block_on(body());
}

async fn nap(duration: Duration) {
    smol::Timer::after(duration).await;
}

fn poller<S, J>(
    backend: &InMemoryBackend,
    node: &str,
    config: PollerConfig,
    source: S,
    job: J,
) -> AsyncTenantPoller<InMemoryBackend, S, J>
where
    S: leader_tenant::TenantSource,
    J: leader_tenant::AsyncTenantJob,
{
    let elector = AsyncLeaderElector::new(backend.clone(), options(node)).unwrap();
    AsyncTenantPoller::new(&elector, config, source, job).unwrap()
}

#[test]
fn three_instances_fifty_tenants_run_each_job_exactly_once_per_cycle() {
    on_each_runtime(|| async {
        let (backend, clock) = manual_backend();
        let names = tenants(50);
        let runs = Runs::default();
        let config = PollerConfig::new("sync", INTERVAL).with_concurrency(8);
        let pollers: Vec<_> = (0..3)
            .map(|i| {
                let (names, runs) = (names.clone(), runs.clone());
                let job = move |tenant: TenantId, _lease: LeaseContext| {
                    let runs = runs.clone();
                    async move {
                        runs.record(&tenant);
                        nap(Duration::from_micros(200)).await;
                        Ok::<_, String>(())
                    }
                };
                poller(
                    &backend,
                    &format!("node-{i}"),
                    config.clone(),
                    move || names.clone(),
                    job,
                )
                .with_clock(clock.clone())
            })
            .collect();
        for round in 0..4 {
            runs.set_round(round);
            let (a, (b, c)) = futures_lite::future::zip(
                pollers[0].run_cycle(),
                futures_lite::future::zip(pollers[1].run_cycle(), pollers[2].run_cycle()),
            )
            .await;
            runs.assert_exactly_once(round, &names);
            assert_one_winner_per_tenant(&[a, b, c], &names);
            clock.advance(INTERVAL);
        }
    });
}

#[test]
fn a_failing_or_panicking_tenant_does_not_affect_the_others() {
    on_each_runtime(|| async {
        let backend = InMemoryBackend::new();
        let config = PollerConfig::new("sync", INTERVAL).with_min_lease_time(Duration::ZERO);
        let names = tenants(10);
        let source = move || names.clone();
        let job = |tenant: TenantId, _lease: LeaseContext| {
            if tenant.as_str() == "tenant-007" {
                panic!("tenant 7 panicked before its future existed");
            }
            async move {
                nap(Duration::from_millis(1)).await;
                match tenant.as_str() {
                    "tenant-003" => panic!("tenant 3 is broken"),
                    "tenant-005" => Err(format!("{tenant} has no invoices table")),
                    _ => Ok(tenant.as_str().len()),
                }
            }
        };
        let poller = poller(&backend, "node", config, source, job);
        let report = poller.run_cycle().await;
        assert_eq!(report.count(OutcomeKind::Elected), 7, "{report}");
        for (tenant, message) in [
            ("tenant-003", "tenant 3 is broken"),
            ("tenant-007", "tenant 7 panicked before its future existed"),
        ] {
            match &report.tenant(tenant).unwrap().outcome {
                TenantOutcome::Failed(JobFailure::Panicked(m)) => assert_eq!(m, message),
                other => panic!("{tenant}: expected a panic, got {other:?}"),
            }
        }
        assert!(matches!(
            report.tenant("tenant-005").unwrap().outcome,
            TenantOutcome::Failed(JobFailure::Error(_))
        ));
        // Every lease was released, the panicking ones included (in the background for 7).
        let observer = LeaderElector::new(backend, options("observer")).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        for tenant in ["tenant-003", "tenant-007", "tenant-001"] {
            let scoped = observer.for_tenant(tenant).unwrap();
            while scoped.state("sync").unwrap().status() != LockStatus::Empty {
                assert!(
                    Instant::now() < deadline,
                    "{tenant}'s lease was not released"
                );
                nap(Duration::from_millis(2)).await;
            }
        }
    });
}

#[test]
fn at_most_concurrency_jobs_run_at_once() {
    on_each_runtime(|| async {
        // On the wall clock: a plain lease, so no cycle falls in the guard before a
        // cycle's end (where every tenant is skipped).
        let config = PollerConfig::new("sync", INTERVAL)
            .with_concurrency(5)
            .with_min_lease_time(Duration::ZERO);
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let job = {
            let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
            move |_tenant: TenantId, _lease: LeaseContext| {
                let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    nap(Duration::from_millis(3)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok::<_, String>(())
                }
            }
        };
        let names = tenants(30);
        let poller = poller(
            &InMemoryBackend::new(),
            "node",
            config,
            move || names.clone(),
            job,
        );
        let report = poller.run_cycle().await;
        assert_eq!(report.count(OutcomeKind::Elected), 30);
        let peak = peak.load(Ordering::SeqCst);
        assert!(
            (2..=5).contains(&peak),
            "peak {peak}: bounded by 5, and concurrent"
        );
    });
}

/// A poller whose jobs wait for `gate`; returns the count of jobs that started.
fn gated(
    backend: &InMemoryBackend,
    mode: ShutdownMode,
    gate: &Shutdown,
) -> (
    AsyncTenantPoller<
        InMemoryBackend,
        impl leader_tenant::TenantSource + use<>,
        impl leader_tenant::AsyncTenantJob<Output = (), Error = String> + use<>,
    >,
    Arc<AtomicUsize>,
) {
    let started = Arc::new(AtomicUsize::new(0));
    let config = PollerConfig::new("sync", INTERVAL)
        .with_concurrency(2)
        .with_min_lease_time(Duration::ZERO)
        .with_shutdown_mode(mode);
    let job = {
        let (gate, started) = (gate.clone(), Arc::clone(&started));
        move |_tenant: TenantId, _lease: LeaseContext| {
            let (gate, started) = (gate.clone(), Arc::clone(&started));
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                gate.triggered().await;
                Ok::<_, String>(())
            }
        }
    };
    let names = tenants(6);
    (
        poller(backend, "node", config, move || names.clone(), job),
        started,
    )
}

async fn wait_for(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        nap(Duration::from_millis(2)).await;
    }
}

#[test]
fn shutdown_in_finish_mode_waits_for_jobs_in_flight_and_starts_no_more() {
    on_each_runtime(|| async {
        let backend = InMemoryBackend::new();
        let (gate, shutdown) = (Shutdown::new(), Shutdown::new());
        let (poller, started) = gated(&backend, ShutdownMode::Finish, &gate);
        let control = async {
            wait_for("two jobs to start", || started.load(Ordering::SeqCst) == 2).await;
            shutdown.trigger();
            nap(Duration::from_millis(20)).await;
            gate.trigger();
        };
        let (report, ()) =
            futures_lite::future::zip(poller.run_cycle_until(&shutdown), control).await;
        assert_eq!(report.count(OutcomeKind::Elected), 2, "{report}");
        assert_eq!(report.count(OutcomeKind::NotStarted), 4);
        assert!(report.interrupted);
    });
}

#[test]
fn shutdown_in_abandon_mode_drops_jobs_in_flight_and_releases_their_leases() {
    on_each_runtime(|| async {
        let backend = InMemoryBackend::new();
        let (gate, shutdown) = (Shutdown::new(), Shutdown::new());
        let (poller, started) = gated(&backend, ShutdownMode::Abandon, &gate);
        let control = async {
            wait_for("two jobs to start", || started.load(Ordering::SeqCst) == 2).await;
            shutdown.trigger();
        };
        let (report, ()) =
            futures_lite::future::zip(poller.run_cycle_until(&shutdown), control).await;
        assert_eq!(report.count(OutcomeKind::Abandoned), 2, "{report}");
        assert_eq!(report.count(OutcomeKind::NotStarted), 4);
        // The gate never opened: the leases are released because the futures were dropped.
        let observer = LeaderElector::new(backend, options("observer")).unwrap();
        let held = || {
            report
                .tenants
                .iter()
                .filter(|t| t.outcome.kind() == OutcomeKind::Abandoned)
                .any(|t| {
                    let scoped = observer.for_tenant(t.tenant.as_str()).unwrap();
                    scoped.state("sync").unwrap().status() == LockStatus::Occupied
                })
        };
        wait_for("the abandoned leases to be released", || !held()).await;
    });
}

#[test]
fn run_stops_while_waiting_for_the_next_cycle() {
    on_each_runtime(|| async {
        let config = PollerConfig::new("sync", Duration::from_secs(3600));
        let job = |_t: TenantId, _lease: LeaseContext| async { Ok::<_, String>(()) };
        // The next cycle is 3599 s away on this clock; on the wall clock, a run started
        // within 50 ms of an hour's end would run a cycle before the shutdown.
        let poller = poller(&InMemoryBackend::new(), "node", config, || ["acme"], job).with_clock(
            common::clock_into_cycle(Duration::from_secs(3600), Duration::from_secs(1)),
        );
        let shutdown = Shutdown::new();
        let mut reports = 0;
        let started = Instant::now();
        let stop = async {
            nap(Duration::from_millis(50)).await;
            shutdown.trigger();
        };
        futures_lite::future::zip(poller.run(&shutdown, |_| reports += 1), stop).await;
        assert_eq!(reports, 0);
        assert!(started.elapsed() < Duration::from_secs(5));
    });
}

#[test]
fn the_poller_future_can_be_spawned_on_tokio() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = PollerConfig::new("sync", Duration::from_millis(100));
        let job =
            |t: TenantId, _lease: LeaseContext| async move { Ok::<_, String>(t.as_str().len()) };
        let poller = poller(
            &InMemoryBackend::new(),
            "node",
            config,
            || ["acme", "globex"],
            job,
        );
        assert_eq!(
            poller.concurrency(),
            PollerConfig::DEFAULT_ASYNC_CONCURRENCY
        );
        let shutdown = Shutdown::new();
        let task = tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                let mut elected = Vec::new();
                poller
                    .run(&shutdown, |report| {
                        elected.push(report.count(OutcomeKind::Elected));
                        if elected.len() == 2 {
                            shutdown.trigger();
                        }
                    })
                    .await;
                elected
            }
        });
        assert_eq!(task.await.unwrap(), [2, 2]);
    });
}

#[test]
fn each_job_runs_under_its_tenants_lease_and_sees_its_fencing_token() {
    on_each_runtime(|| async {
        let (backend, clock) = manual_backend();
        let store = backend.clone();
        let job = move |tenant: TenantId, lease: LeaseContext| {
            let seen = common::see_lease(&store, &tenant, "sync", &lease);
            async move { Ok::<_, String>(seen) }
        };
        let poller = poller(
            &backend,
            "node",
            PollerConfig::new("sync", INTERVAL),
            || ["acme", "globex"],
            job,
        )
        .with_clock(clock.clone());
        let mut tokens = std::collections::HashMap::new();
        for _ in 0..3 {
            common::assert_jobs_ran_under_their_leases(&poller.run_cycle().await, &mut tokens);
            clock.advance(INTERVAL);
        }
    });
}

#[test]
fn a_job_in_flight_goes_on_while_the_next_batch_is_tried() {
    on_each_runtime(|| async {
        let backend = FaultyBackend::new(InMemoryBackend::new());
        // One tenant a batch. The second tenant's lock answers only once the first
        // tenant's job has cleared the fault: the cycle must drive that job while it waits
        // for the second batch's answer, or neither ever ends.
        let second = TenantId::new("second").unwrap().lock_name("sync").unwrap();
        backend.set_on_key(Op::Acquire, &second, Fault::Stall);
        let config = PollerConfig::new("sync", INTERVAL)
            .with_concurrency(2)
            .with_acquire_batch(1)
            .with_min_lease_time(Duration::ZERO);
        let job = {
            let backend = backend.clone();
            move |tenant: TenantId, _lease: LeaseContext| {
                let backend = backend.clone();
                async move {
                    // Pending once, so the cycle moves on to the next batch first.
                    nap(Duration::from_millis(1)).await;
                    if tenant.as_str() == "first" {
                        backend.clear(Op::Acquire);
                    }
                    Ok::<_, String>(())
                }
            }
        };
        let elector = AsyncLeaderElector::new(backend, options("node")).unwrap();
        let poller = AsyncTenantPoller::new(&elector, config, || ["first", "second"], job).unwrap();
        let cycle = async { Some(poller.run_cycle().await) };
        let timeout = async {
            nap(Duration::from_secs(10)).await;
            None
        };
        let report = futures_lite::future::or(cycle, timeout).await.expect(
            "the cycle stood still: the first job did not run while the second batch waited",
        );
        assert_eq!(report.count(OutcomeKind::Elected), 2, "{report}");
    });
}

#[test]
fn won_tenants_that_shutdown_keeps_from_starting_are_freed_at_once_without_the_min_lease() {
    on_each_runtime(|| async {
        let (backend, clock) = manual_backend();
        // One batch takes all six tenants' locks; one at a time they run, and the first
        // job triggers the shutdown. The default minimum lease keeps a run's lock to the
        // cycle's end; the five never started must not be kept.
        let config = PollerConfig::new("sync", INTERVAL)
            .with_concurrency(1)
            .with_acquire_batch(64);
        let shutdown = Shutdown::new();
        let job = {
            let shutdown = shutdown.clone();
            move |_tenant: TenantId, _lease: LeaseContext| {
                shutdown.trigger();
                async { Ok::<_, String>(()) }
            }
        };
        // On the backend's clock, which stands at a cycle's start: on the wall clock, a
        // cycle run in the last second of a minute (the guard before its end) would skip
        // every tenant.
        let poller = poller(&backend, "node", config, || tenants(6), job).with_clock(clock);
        let report = poller.run_cycle_until(&shutdown).await;
        assert_eq!(report.count(OutcomeKind::Elected), 1, "{report}");
        assert_eq!(report.count(OutcomeKind::NotStarted), 5, "{report}");
        let observer = LeaderElector::new(backend.clone(), options("observer")).unwrap();
        let held = |tenant: &str| {
            let state = observer.for_tenant(tenant).unwrap().state("sync").unwrap();
            state.status() == LockStatus::Occupied
        };
        for line in &report.tenants {
            let kept = line.outcome.kind() == OutcomeKind::Elected;
            let what = format!(
                "{}'s lock to be {}",
                line.tenant,
                if kept { "kept" } else { "freed" }
            );
            wait_for(&what, || held(&line.tenant) == kept).await;
        }
    });
}

#[test]
fn a_won_tenant_whose_lease_ran_out_while_it_waited_is_acquired_again_before_its_job() {
    on_each_runtime(|| async {
        let backend = InMemoryBackend::new();
        let elector = AsyncLeaderElector::new(
            backend,
            options("node").with_lease_time(Duration::from_millis(300)),
        )
        .unwrap();
        // One batch wins all three; the first job outlasts the others' leases (no minimum
        // lease stretches them), so their jobs must not start on the batch's leases.
        let config = PollerConfig::new("sync", INTERVAL)
            .with_concurrency(1)
            .with_min_lease_time(Duration::ZERO)
            .with_acquire_batch(64);
        let job = |tenant: TenantId, lease: LeaseContext| async move {
            let lost_at_start = lease.is_lost();
            if tenant.as_str() == "tenant-000" {
                nap(Duration::from_millis(600)).await;
            }
            Ok::<_, String>(lost_at_start)
        };
        let poller = AsyncTenantPoller::new(&elector, config, || tenants(3), job).unwrap();
        let report = poller.run_cycle().await;
        assert_eq!(report.count(OutcomeKind::Elected), 3, "{report}");
        for line in &report.tenants {
            let TenantOutcome::Elected {
                value: lost_at_start,
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
    });
}
