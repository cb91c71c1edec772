//! One cycle of the tenant poller: N tenants x 3 instances, each instance a
//! `BlockingTenantPoller` on its own 4-worker pool (concurrency 4), the three running their
//! cycle at the same time on threads, as three processes would.
//!
//! - `tenant/memory-1000`, `-10000` and `-100000`: the in-memory backend (a manual clock
//!   moves one interval between iterations, so every cycle starts with free locks), with
//!   goal lines for 10,000 (≤ 50 ms) and 100,000 tenants (≤ 300 ms), each with the store's
//!   work of a cycle alone as its limit (the three instances' batch calls in turn on one
//!   thread: on one core, the least a cycle can take);
//! - `tenant/redis-10000`: a redis-server of the bench's own (skipped without one); every
//!   iteration uses a fresh job name, and the keys are deleted after each size; goal lines
//!   for the median of 5 cycles of 10,000 (≤ 150 ms) and of 100,000 tenants (≤ 1.5 s);
//! - PostgreSQL (a server of the bench's own): the median of 5 cycles of 10,000 (≤ 300 ms)
//!   and of 100,000 tenants (≤ 3 s), and the backend calls of one; then the steady state
//!   of 10,000 tenants, the same job every cycle (each cycle updates the rows the one
//!   before left, where the cycles above insert new ones);
//! - printed after each group: backend calls per instance for one cycle, counted by a
//!   wrapper backend (acquire calls per tenant, release calls per elected tenant), and for
//!   Redis the round trips the server saw (`EVALSHA` in `INFO commandstats`) per tenant per
//!   instance, beside the commands the scripts ran inside the server;
//! - each server goal line, when it is not met, gives its limit: the server's CPU time per
//!   cycle over the measured ones (Redis: `INFO cpu`, its one thread; PostgreSQL: its processes in
//!   `/proc`, the ended ones included).
//!
//! ```text
//! cargo bench -p leader-benches --bench tenant
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::Criterion;
use leader_benches::{goal_with_limit, percentile};
use leader_blocking::ThreadPoolLeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, InMemoryBackend, LeaderElectionOptions, LeaseContext,
    LockBackend, LockName, ManualClock, OwnerToken, ReleaseRequest,
};
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures::{self, PostgresServer, RedisServer};
use leader_rig::{Call, CallCounter, CountingBackend};
use leader_tenant::{BlockingTenantPoller, CycleReport, OutcomeKind, PollerConfig, TenantId};

const INSTANCES: usize = 3;
const WORKERS: usize = 4;
const INTERVAL: Duration = Duration::from_secs(3600);
const REDIS_PREFIX: &str = "leader-bench-tenant";

/// One instance's calls of one cycle, from its counter (which starts again at zero):
/// `[acquire calls, acquire requests, release calls, released leases, other calls]`. A
/// batch of any size is one call.
fn take(counter: &CallCounter) -> [u64; 5] {
    let sum = |calls: &[Call], of: fn(&CallCounter, Call) -> u64| {
        calls.iter().map(|call| of(counter, *call)).sum::<u64>()
    };
    let acquires = [
        Call::TryAcquire,
        Call::TryAcquireSlot,
        Call::TryAcquireBatch,
    ];
    let releases = [Call::Release, Call::ReleaseBatch];
    let others = [
        Call::Extend,
        Call::ExtendBatch,
        Call::State,
        Call::List,
        Call::ForceRelease,
    ];
    let counts = [
        sum(&acquires, CallCounter::calls),
        sum(&acquires, CallCounter::locks),
        sum(&releases, CallCounter::calls),
        sum(&releases, CallCounter::locks),
        sum(&others, CallCounter::calls),
    ];
    counter.reset();
    counts
}

type Report = CycleReport<(), std::convert::Infallible>;

/// Three instances over one store.
struct Instances<B> {
    pools: Vec<ThreadPoolLeaderElector<CountingBackend<B>>>,
    calls: Vec<CallCounter>,
    tenants: Arc<Vec<String>>,
    clock: Option<ManualClock>,
    /// The pollers' interval.
    interval: Duration,
}

impl<B: LockBackend + 'static> Instances<B> {
    fn new(tenants: usize, backend: impl Fn() -> B, clock: Option<ManualClock>) -> Self {
        let mut calls = Vec::with_capacity(INSTANCES);
        let pools = (0..INSTANCES)
            .map(|i| {
                let counting = CountingBackend::new(backend());
                calls.push(counting.counter());
                let options = LeaderElectionOptions::default()
                    .with_node_id(format!("instance-{i}"))
                    .with_lease_time(Duration::from_secs(60));
                ThreadPoolLeaderElector::new(counting, options, WORKERS).unwrap()
            })
            .collect();
        let tenants = (0..tenants).map(|t| format!("tenant-{t:05}")).collect();
        Instances {
            pools,
            calls,
            tenants: Arc::new(tenants),
            clock,
            interval: INTERVAL,
        }
    }

    /// The same instances, polling every `interval`.
    fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// One cycle of `job` on all instances at once; the reports and the wall time.
    fn cycle(&self, job: &str) -> (Vec<Report>, Duration) {
        let pollers: Vec<_> = self
            .pools
            .iter()
            .map(|pool| {
                let tenants = Arc::clone(&self.tenants);
                let config = PollerConfig::new(job, self.interval).with_concurrency(WORKERS);
                let source = move || tenants.iter().cloned().collect::<Vec<_>>();
                let work = |_tenant: TenantId, _lease: &LeaseContext| {
                    Ok::<(), std::convert::Infallible>(())
                };
                let poller = BlockingTenantPoller::new(pool, config, source, work).unwrap();
                match &self.clock {
                    Some(clock) => poller.with_clock(clock.clone()),
                    None => poller,
                }
            })
            .collect();
        let start = Instant::now();
        let reports = std::thread::scope(|s| {
            let handles: Vec<_> = pollers
                .iter()
                .map(|poller| s.spawn(|| poller.run_cycle()))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        let elapsed = start.elapsed();
        if let Some(clock) = &self.clock {
            clock.advance(self.interval);
        }
        (reports, elapsed)
    }

    /// Runs one cycle and prints the backend calls of each instance; returns the calls of
    /// all instances (each a round trip on Redis: a batch's up to 1,000 requests are one).
    fn print_calls(&self, label: &str, job: &str) -> u64 {
        for calls in &self.calls {
            calls.reset();
        }
        let (reports, elapsed) = self.cycle(job);
        let elected: usize = reports.iter().map(|r| r.count(OutcomeKind::Elected)).sum();
        println!(
            "{label}: one cycle of {} tenants x {INSTANCES} instances in {elapsed:?}; {elected} elected in all",
            self.tenants.len()
        );
        let mut all_calls = 0;
        for (i, (report, calls)) in reports.iter().zip(&self.calls).enumerate() {
            let [acquire, requests, release, released, other] = take(calls);
            all_calls += acquire + release + other;
            let ran = report.count(OutcomeKind::Elected);
            let skipped = report.count(OutcomeKind::Skipped);
            let per = |calls: u64, tenants: usize| match tenants {
                0 => "-".to_owned(),
                n => format!("{:.2}", calls as f64 / n as f64),
            };
            // Every tenant is one acquire request, a run one release; both go in batches.
            println!(
                "  instance-{i}: ran {ran}, skipped {skipped}; acquire calls per tenant {} \
                 ({} requests), release calls per tenant run {} ({} leases), other calls {other}",
                per(acquire, ran + skipped),
                per(requests, ran + skipped),
                per(release, ran),
                per(released, ran),
            );
        }
        all_calls
    }
}

fn memory(c: &mut Criterion) {
    let mut group = c.benchmark_group("tenant");
    group.sample_size(10);
    for (tenants, goal_ms) in [(1_000, None), (10_000, Some(50.0)), (100_000, Some(300.0))] {
        let clock = ManualClock::new(UNIX_EPOCH + INTERVAL * 500_000);
        let backend = InMemoryBackend::with_clock(clock.clone());
        let instances = Instances::new(tenants, || backend.clone(), Some(clock));
        group.bench_function(format!("memory-{tenants}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| instances.cycle("sync").1).sum())
        });
        instances.print_calls(&format!("memory-{tenants}"), "sync");
        if let Some(goal_ms) = goal_ms {
            let cycle = median_cycle(|| instances.cycle("sync").1);
            let store = median_cycle(|| store_cycle(tenants));
            goal_with_limit(
                &format!("tenant memory cycle, {} tenants x 3", thousands(tenants)),
                millis(cycle),
                goal_ms,
                " ms",
                &format!(
                    "the store's calls alone (each instance's acquire batches of {} and \
                     release batches of what it won, the three in turn on one thread, the \
                     names built beforehand) take {:.2} ms, and ours {:.2}x that",
                    PollerConfig::DEFAULT_ACQUIRE_BATCH,
                    millis(store),
                    cycle.as_secs_f64() / store.as_secs_f64()
                ),
            );
        }
    }
    group.finish();
}

/// The median of [`MEDIAN_OF`] cycles, and the server's CPU time per cycle over them (`None`
/// when `server_cpu` cannot tell): with three instances' cycles overlapping, the server's
/// share of a cycle's time.
fn median_cycle_and_server_cpu(
    cycle: impl FnMut() -> Duration,
    mut server_cpu: impl FnMut() -> Option<Duration>,
) -> (Duration, Option<Duration>) {
    let before = server_cpu();
    let median = median_cycle(cycle);
    let busy = before
        .zip(server_cpu())
        .map(|(before, after)| after.saturating_sub(before) / MEDIAN_OF);
    (median, busy)
}

/// The limit of a tenant cycle's goal: the server's CPU time per cycle, over `threads`
/// threads that can run at once (Redis runs commands on one; PostgreSQL's sessions share
/// the machine's cores), the least time a cycle can take on this machine.
fn server_limit(busy: Option<Duration>, threads: usize) -> String {
    let Some(busy) = busy else {
        return "the server's CPU time could not be read".to_owned();
    };
    let least = millis(busy) / threads as f64;
    format!(
        "the server was busy for {:.0} ms of CPU a cycle, on {threads} thread(s) at once at \
         most: a cycle takes {least:.0} ms or more",
        millis(busy)
    )
}

/// How many cycles a goal's median is taken over.
const MEDIAN_OF: u32 = 5;

/// The store's work of one in-memory cycle of `tenants` x 3 alone, timed: on a fresh
/// backend, each instance tries every tenant's lock in batches of the poller's default
/// size and then releases what it won in batches of that size, keeping each lock for the
/// interval as a poller does, so the instances after the first find every lock held;
/// the three in turn on this thread, the names built before the clock starts. On one
/// core, the least a cycle's time can come to.
fn store_cycle(tenants: usize) -> Duration {
    let clock = ManualClock::new(UNIX_EPOCH + INTERVAL * 500_000);
    let backend = InMemoryBackend::with_clock(clock);
    let names: Vec<LockName> = (0..tenants)
        .map(|t| LockName::new(format!("tenant-{t:05}/bench-job")).unwrap())
        .collect();
    let nodes: Vec<String> = (0..INSTANCES).map(|i| format!("instance-{i}")).collect();
    let batch = PollerConfig::DEFAULT_ACQUIRE_BATCH;
    let lease_time = Duration::from_secs(60);
    let start = Instant::now();
    for node in &nodes {
        let mut won = Vec::with_capacity(tenants);
        for names in names.chunks(batch) {
            let requests: Vec<AcquireRequest<'_>> = names
                .iter()
                .map(|key| AcquireRequest::new(key, OwnerToken::random(), node, lease_time))
                .collect();
            for answer in backend.try_acquire_batch(&requests) {
                if let Ok(AcquireOutcome::Acquired(lease)) = answer {
                    won.push(lease);
                }
            }
        }
        for leases in won.chunks(batch) {
            let releases: Vec<ReleaseRequest<'_>> = leases
                .iter()
                .map(|lease| ReleaseRequest::new(lease, INTERVAL))
                .collect();
            for answer in backend.release_batch(&releases) {
                answer.unwrap();
            }
        }
    }
    start.elapsed()
}

/// The median of [`MEDIAN_OF`] cycles.
fn median_cycle(mut cycle: impl FnMut() -> Duration) -> Duration {
    let mut cycles: Vec<Duration> = (0..MEDIAN_OF).map(|_| cycle()).collect();
    cycles.sort();
    percentile(&cycles, 50)
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// `n` with thousands separated by commas: 100,000.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn redis(c: &mut Criterion) {
    let Some(server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let url = server.url();
    let config = RedisConfig::default()
        .with_key_prefix(REDIS_PREFIX)
        .with_max_idle_connections(WORKERS);
    let backend = || RedisBackend::connect_with(&url, config.clone()).unwrap();
    let mut server = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    delete_bench_keys(&mut server);
    let fresh_job = {
        let run = AtomicU64::new(0);
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        move || format!("sync-{since}-{}", run.fetch_add(1, Ordering::Relaxed))
    };

    for (tenants, goal_ms) in [(10_000, 150.0), (100_000, 1500.0)] {
        let instances = Instances::new(tenants, &backend, None);
        if tenants == 10_000 {
            let mut group = c.benchmark_group("tenant");
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(30));
            group.bench_function("redis-10000", |b| {
                b.iter_custom(|iters| (0..iters).map(|_| instances.cycle(&fresh_job()).1).sum())
            });
            group.finish();
        }
        let (cycle, busy) = median_cycle_and_server_cpu(
            || instances.cycle(&fresh_job()).1,
            || leader_benches::redis_cpu_time(&mut server),
        );
        goal_with_limit(
            &format!("tenant redis cycle, {} tenants x 3", thousands(tenants)),
            millis(cycle),
            goal_ms,
            " ms",
            &server_limit(busy, 1),
        );
        redis_costs(&instances, &mut server, &fresh_job());
        delete_bench_keys(&mut server);
    }
}

/// Runs one cycle of `job` and prints what it cost the server: round trips, scripts and
/// the commands they ran, per tenant per instance, with the server's time.
fn redis_costs<B: LockBackend + 'static>(
    instances: &Instances<B>,
    server: &mut redis::Connection,
    job: &str,
) {
    let tenants = instances.tenants.len();
    let before = leader_benches::redis_command_stats(server);
    let usec_before = leader_benches::redis_command_usec(server);
    let calls = instances.print_calls(&format!("redis-{tenants}"), job);
    let after = leader_benches::redis_command_stats(server);
    let usec_after = leader_benches::redis_command_usec(server);
    let pairs = (tenants * INSTANCES) as f64;
    let server_ms = |name: &str| {
        let of =
            |stats: &[(String, u64)]| stats.iter().find(|(n, _)| n == name).map_or(0, |(_, u)| *u);
        (of(&usec_after) - of(&usec_before)) as f64 / 1e3
    };
    println!(
        "  server time for the cycle: EVALSHA {:.1} ms (scripts included), {:.2} us per tenant per instance",
        server_ms("evalsha"),
        server_ms("evalsha") * 1e3 / pairs
    );
    let delta = |name: &str| {
        after.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c)
            - before
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0, |(_, c)| *c)
    };
    // Every backend call is one round trip (a batch pipelines its scripts); the server runs
    // one EVALSHA per request. INFO commandstats also counts the commands the scripts run
    // inside the server, which are not round trips.
    println!(
        "  round trips: {calls} for the cycle => {:.3} per tenant per instance; \
         the server ran {} EVALSHA ({:.2} per tenant per instance)",
        calls as f64 / pairs,
        delta("evalsha"),
        delta("evalsha") as f64 / pairs
    );
    let inner: Vec<String> = after
        .iter()
        .filter(|(name, _)| name != "evalsha" && name != "info")
        .map(|(name, _)| (name, delta(name)))
        .filter(|(_, calls)| *calls > 0)
        .map(|(name, calls)| {
            format!(
                "{name} {:.2} ({:.1} ms)",
                calls as f64 / pairs,
                server_ms(name)
            )
        })
        .collect();
    println!(
        "  other commands per tenant per instance (mostly inside the scripts): {}",
        inner.join(", ")
    );
}

fn postgres(_c: &mut Criterion) {
    let Some(server) = fixtures::require("postgres", PostgresServer::start()) else {
        return;
    };
    let url = server.url();
    let config = PostgresConfig::default().with_table("tenant_locks");
    let backend = || PostgresBackend::connect_with(&url, config.clone()).unwrap();
    let fresh_job = {
        let run = AtomicU64::new(0);
        move || format!("sync-{}", run.fetch_add(1, Ordering::Relaxed))
    };
    for (tenants, goal_ms) in [(10_000, 300.0), (100_000, 3000.0)] {
        let instances = Instances::new(tenants, &backend, None);
        let (cycle, busy) =
            median_cycle_and_server_cpu(|| instances.cycle(&fresh_job()).1, || server.cpu_time());
        goal_with_limit(
            &format!("tenant postgres cycle, {} tenants x 3", thousands(tenants)),
            millis(cycle),
            goal_ms,
            " ms",
            &server_limit(
                busy,
                std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            ),
        );
        // Every backend call is one round trip but a batch acquire's second statement,
        // which reads the holders of the locks it did not take (one per 1,000 requests).
        let calls = instances.print_calls(&format!("postgres-{tenants}"), &fresh_job());
        println!(
            "  backend calls: {calls} for the cycle => {:.4} per tenant per instance",
            calls as f64 / (tenants * INSTANCES) as f64
        );
    }
    postgres_steady(&url);
}

/// The steady state on PostgreSQL: the same job every cycle, so each cycle updates the
/// rows the one before left (its locks ended at the cycle's boundary), where the cycles
/// above insert new ones. Each cycle starts just after a boundary of a 2 s interval, once
/// the locks of the cycle before are free; the first, which inserts the rows, is not
/// counted.
fn postgres_steady(url: &str) {
    const STEADY_INTERVAL: Duration = Duration::from_secs(2);
    const TENANTS: usize = 10_000;
    let config = PostgresConfig::default().with_table("tenant_steady");
    let backend = || PostgresBackend::connect_with(url, config.clone()).unwrap();
    let instances = Instances::new(TENANTS, backend, None).with_interval(STEADY_INTERVAL);
    let cycle = || {
        std::thread::sleep(
            leader_testkit::until_next_boundary(STEADY_INTERVAL) + Duration::from_millis(50),
        );
        let (reports, elapsed) = instances.cycle("steady");
        let elected: usize = reports.iter().map(|r| r.count(OutcomeKind::Elected)).sum();
        assert_eq!(elected, TENANTS, "each tenant once a cycle");
        elapsed
    };
    cycle();
    println!(
        "tenant postgres steady cycle, 10,000 tenants x 3, the same job every cycle: {:.2} ms",
        millis(median_cycle(cycle))
    );
}

fn delete_bench_keys(server: &mut redis::Connection) {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{REDIS_PREFIX}:*"))
        .query(server)
        .unwrap();
    for chunk in keys.chunks(1_000) {
        let _: () = redis::cmd("UNLINK").arg(chunk).query(server).unwrap();
    }
}

criterion::criterion_group!(benches, memory, redis, postgres);
criterion::criterion_main!(benches);
