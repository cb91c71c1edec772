//! Shared by the poller tests: tenants, a run counter, instances on one backend.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseContext, ManualClock};
use leader_tenant::{CycleReport, OutcomeKind, TenantId};
use parking_lot::Mutex;

pub const INTERVAL: Duration = Duration::from_secs(60);

pub fn tenants(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("tenant-{i:03}")).collect()
}

/// An in-memory backend on a manual clock, so tests move time instead of sleeping. The
/// clock starts on a cycle boundary of [`INTERVAL`]; give it to the pollers too.
pub fn manual_backend() -> (InMemoryBackend, ManualClock) {
    let since_epoch = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let boundary = since_epoch.as_secs() / INTERVAL.as_secs() * INTERVAL.as_secs();
    let clock = ManualClock::new(std::time::UNIX_EPOCH + Duration::from_secs(boundary));
    (InMemoryBackend::with_clock(clock.clone()), clock)
}

/// A manual clock standing `into` after the start of a cycle of `interval`: a fixed cycle
/// (in November 2023), so where the wall clock stands when the test runs changes nothing.
pub fn clock_into_cycle(interval: Duration, into: Duration) -> ManualClock {
    let base = Duration::from_secs(1_700_000_000).as_nanos();
    let start = base - base % interval.as_nanos();
    let start = Duration::from_nanos(u64::try_from(start).unwrap());
    ManualClock::new(std::time::UNIX_EPOCH + start + into)
}

pub fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_lease_time(Duration::from_secs(120))
}

/// Counts job runs per (round, tenant); the test sets the round.
#[derive(Debug, Clone, Default)]
pub struct Runs {
    round: Arc<AtomicU64>,
    counts: Arc<Mutex<HashMap<(u64, String), u32>>>,
}

impl Runs {
    pub fn set_round(&self, round: u64) {
        self.round.store(round, Ordering::SeqCst);
    }

    pub fn record(&self, tenant: &TenantId) {
        let round = self.round.load(Ordering::SeqCst);
        *self
            .counts
            .lock()
            .entry((round, tenant.to_string()))
            .or_default() += 1;
    }

    pub fn count(&self, round: u64, tenant: &str) -> u32 {
        self.counts
            .lock()
            .get(&(round, tenant.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Asserts every tenant ran exactly once in `round`.
    pub fn assert_exactly_once(&self, round: u64, tenants: &[String]) {
        for tenant in tenants {
            assert_eq!(
                self.count(round, tenant),
                1,
                "round {round}: {tenant} must run exactly once"
            );
        }
    }
}

/// Asserts that across the instances' reports of one cycle, each tenant was elected in
/// exactly one and skipped in all the others.
pub fn assert_one_winner_per_tenant<T, E>(reports: &[CycleReport<T, E>], tenants: &[String]) {
    for tenant in tenants {
        let kinds: Vec<_> = reports
            .iter()
            .map(|r| r.tenant(tenant).unwrap().outcome.kind())
            .collect();
        let elected = kinds.iter().filter(|k| **k == OutcomeKind::Elected).count();
        let skipped = kinds.iter().filter(|k| **k == OutcomeKind::Skipped).count();
        assert_eq!(
            (elected, skipped),
            (1, reports.len() - 1),
            "{tenant}: {kinds:?}"
        );
    }
}

/// What a lease-reading job returns: the fencing token its `LeaseContext` carries, the one
/// the store records for `tenant:<id>:<job>` while the job runs, and whether the lease
/// checked out as live.
pub type SeenLease = (u64, Option<u64>, bool);

/// Reads what a job sees of its lease, and what the store holds for the tenant's lock.
pub fn see_lease(
    backend: &InMemoryBackend,
    tenant: &TenantId,
    job: &str,
    lease: &LeaseContext,
) -> SeenLease {
    let key = tenant.lock_name(job).unwrap();
    let stored = leader_core::LockBackend::state(backend, &key)
        .unwrap()
        .leader()
        .map(|holder| holder.fencing_token);
    (lease.fencing_token(), stored, lease.check().is_ok())
}

/// Asserts each elected tenant's job ran under the lease the report names and the store
/// holds, and that its token is above the tenant's token in `earlier` (then updates it).
pub fn assert_jobs_ran_under_their_leases<E: std::fmt::Debug>(
    report: &CycleReport<SeenLease, E>,
    earlier: &mut HashMap<String, u64>,
) {
    assert!(!report.tenants.is_empty());
    for tenant in &report.tenants {
        let leader_tenant::TenantOutcome::Elected {
            value: (seen, stored, live),
            fencing_token,
            ..
        } = &tenant.outcome
        else {
            panic!("{}: {:?}", tenant.tenant, tenant.outcome.kind());
        };
        assert!(live, "{}: the lease was live during the job", tenant.tenant);
        assert_eq!(seen, fencing_token, "{}", tenant.tenant);
        assert_eq!(stored.as_ref(), Some(fencing_token), "{}", tenant.tenant);
        let before = earlier.insert(tenant.tenant.to_string(), *fencing_token);
        assert!(
            before.is_none_or(|b| b < *fencing_token),
            "{}: token {fencing_token} after {before:?}",
            tenant.tenant
        );
    }
}

/// A job name no earlier test run used (servers keep state between runs).
pub fn unique_job(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// Three instances run the real scheduler (`run`) over `names`, started a third of an
/// interval apart, until `cycles` full cycles have passed. Asserts that in every cycle any
/// instance ran, each tenant's job ran exactly once (counted by the job, bucketed by the
/// cycle it ran in) and was elected in exactly one instance's report.
pub fn scheduled_instances_run_each_job_once<B>(
    pools: Vec<leader_blocking::ThreadPoolLeaderElector<B>>,
    job_name: &str,
    names: &[String],
    interval: Duration,
    cycles: u64,
) where
    B: leader_core::LockBackend + 'static,
{
    use leader_tenant::{BlockingTenantPoller, PollerConfig, Shutdown};

    let cycle_of = move |at: SystemTime| {
        let since = at.duration_since(std::time::UNIX_EPOCH).unwrap();
        (since.as_nanos() / interval.as_nanos()) as u64
    };
    let counts: Arc<Mutex<HashMap<(u64, String), u32>>> = Arc::default();
    let reports = Mutex::new(Vec::new());
    let shutdown = Shutdown::new();
    let last_cycle = cycle_of(SystemTime::now()) + cycles + 1;
    std::thread::scope(|s| {
        for (i, pool) in pools.iter().enumerate() {
            let names = names.to_vec();
            let counts = Arc::clone(&counts);
            let job = move |tenant: TenantId, _lease: &LeaseContext| {
                let cycle = cycle_of(SystemTime::now());
                *counts
                    .lock()
                    .entry((cycle, tenant.to_string()))
                    .or_default() += 1;
                Ok::<_, String>(())
            };
            // Real time with short intervals on a possibly loaded test machine: a guard of
            // a fifth of the interval covers the acquire latency (the default, at most
            // 1 s, is made for intervals of seconds to hours).
            let config = PollerConfig::new(job_name, interval)
                .with_concurrency(4)
                .with_cycle_end_guard(interval / 5);
            let poller =
                BlockingTenantPoller::new(pool, config, move || names.clone(), job).unwrap();
            let (reports, shutdown) = (&reports, &shutdown);
            s.spawn(move || {
                std::thread::sleep(interval * i as u32 / 3);
                poller.run(shutdown, |report| reports.lock().push(report));
            });
        }
        // Stop half-way through the last cycle, after every instance finished it. The
        // guard triggers the shutdown even if an assertion here fails, so the scope ends.
        struct StopOnDrop<'a>(&'a Shutdown);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.trigger();
            }
        }
        let _stop = StopOnDrop(&shutdown);
        let stop_nanos = interval.as_nanos() * u128::from(last_cycle) + interval.as_nanos() / 2;
        let stop_at = std::time::UNIX_EPOCH
            + Duration::from_secs(u64::try_from(stop_nanos / 1_000_000_000).unwrap())
            + Duration::from_nanos(u64::try_from(stop_nanos % 1_000_000_000).unwrap());
        std::thread::sleep(
            stop_at
                .duration_since(SystemTime::now())
                .unwrap_or_default(),
        );
        shutdown.trigger();
    });

    let reports = reports.into_inner();
    let mut seen: Vec<u64> = reports.iter().map(|r| r.cycle).collect();
    seen.sort_unstable();
    seen.dedup();
    assert!(seen.len() as u64 >= cycles, "only cycles {seen:?} ran");
    let counts = counts.lock();
    for cycle in &seen {
        let in_cycle: Vec<_> = reports.iter().filter(|r| r.cycle == *cycle).collect();
        for tenant in names {
            assert_eq!(
                counts.get(&(*cycle, tenant.clone())).copied().unwrap_or(0),
                1,
                "cycle {cycle}: {tenant} must run exactly once"
            );
            let elected = in_cycle
                .iter()
                .filter(|r| r.tenant(tenant).unwrap().outcome.kind() == OutcomeKind::Elected)
                .count();
            assert_eq!(elected, 1, "cycle {cycle}: {tenant}");
        }
    }
    let total: u32 = counts.values().sum();
    assert_eq!(
        total as usize,
        seen.len() * names.len(),
        "no run outside a reported cycle"
    );
}

/// Three async instances (each with a backend of its own from `backend`, as separate
/// processes would have) over 50 tenants, each cycle started just after its boundary, as a
/// scheduler would: for three cycles, every tenant's job runs exactly once, with one
/// winner per tenant and no error.
pub fn async_instances_run_each_job_once<B>(backend: impl Fn() -> B, interval: Duration)
where
    B: leader_core::AsyncLockBackend + 'static,
{
    use leader_async::AsyncLeaderElector;
    use leader_tenant::{AsyncTenantPoller, PollerConfig};

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let job_name = unique_job("async-sync");
        let names = tenants(50);
        let runs = Runs::default();
        let pollers: Vec<_> = (0..3)
            .map(|i| {
                let elector =
                    AsyncLeaderElector::new(backend(), options(&format!("node-{i}"))).unwrap();
                let config = PollerConfig::new(job_name.as_str(), interval)
                    .with_concurrency(8)
                    .with_cycle_end_guard(interval / 5);
                let (names, runs) = (names.clone(), runs.clone());
                let job = move |tenant: TenantId, _lease: LeaseContext| {
                    let runs = runs.clone();
                    async move {
                        runs.record(&tenant);
                        Ok::<_, String>(())
                    }
                };
                AsyncTenantPoller::new(&elector, config, move || names.clone(), job).unwrap()
            })
            .collect();
        for round in 0..3 {
            runs.set_round(round);
            tokio::time::sleep(
                leader_testkit::until_next_boundary(interval) + Duration::from_millis(5),
            )
            .await;
            let (a, (b, c)) = futures_lite::future::zip(
                pollers[0].run_cycle(),
                futures_lite::future::zip(pollers[1].run_cycle(), pollers[2].run_cycle()),
            )
            .await;
            let reports = [a, b, c];
            for report in &reports {
                assert_eq!(report.count(OutcomeKind::Error), 0, "{report}");
            }
            runs.assert_exactly_once(round, &names);
            assert_one_winner_per_tenant(&reports, &names);
        }
    });
}

/// A tenant-scoped run's lock is the key `tenant:acme:<job>` in `backend`'s store, seen
/// by the scoped elector under the job's own name and free for the unscoped one.
pub fn the_tenant_prefix_is_physical<B: leader_core::LockBackend + 'static>(backend: B) {
    use leader_core::{LockBackend, LockName, LockStatus};

    let elector = leader_blocking::LeaderElector::new(backend, options("a")).unwrap();
    let acme = elector.for_tenant("acme").unwrap();
    let job = unique_job("physical");
    acme.run_if_leader(&job, || {
        let key = LockName::new(format!("tenant:acme:{job}")).unwrap();
        let physical = LockBackend::state(elector.backend().as_ref(), &key).unwrap();
        assert_eq!(physical.status(), LockStatus::Occupied);
        assert_eq!(physical.lock_name(), format!("tenant:acme:{job}"));
        assert_eq!(acme.state(&job).unwrap().lock_name(), job);
        assert_eq!(elector.state(&job).unwrap().status(), LockStatus::Empty);
    })
    .unwrap()
    .unwrap();
}
