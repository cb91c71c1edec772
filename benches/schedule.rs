//! The scheduler on Redis with 1,000 registered jobs at a 1 s rate.
//!
//! - `schedule/redis-1000-jobs-fire`: one node fires one tick of all 1,000 jobs at once
//!   (`AsyncScheduler::fire`, each job claiming its tick and running a no-op), beside
//!   `schedule/redis-1000-floor`: the same 1,000 tasks each sending the five round trips a
//!   firing makes as plain `PING`s on one multiplexed connection (the hop-free floor).
//! - Then a live run: three schedulers (three nodes, one async runtime each) with the
//!   1,000 jobs every second for `LIVE_TICKS` ticks; printed: the runs (each tick of each
//!   job once), the round trips the server saw per job per tick (`INFO commandstats`),
//!   the bench process's CPU time per tick, and the tick lateness (run start minus the
//!   tick) p50 and p99.
//!
//! ```text
//! cargo bench -p leader-benches --bench schedule
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::Criterion;
use leader_async::AsyncLeaderElector;
use leader_benches::{percentile, ratio};
use leader_core::{LeaderElectionOptions, Shutdown};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures::{self, RedisServer};
use leader_schedule::{AsyncScheduler, JobConfig, Schedule};
use parking_lot::Mutex;

const JOBS: usize = 1000;
const NODES: usize = 3;
const LIVE_TICKS: u64 = 10;
const PREFIX: &str = "leader-bench-schedule";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn backend(url: &str) -> RedisBackend {
    RedisBackend::connect_with(url, RedisConfig::default().with_key_prefix(PREFIX)).unwrap()
}

/// The runs a bench saw: (job, tick in ms since the epoch, lateness).
type Runs = Arc<Mutex<Vec<(usize, u64, Duration)>>>;

/// A scheduler over `url` with the 1,000 jobs `{jobs}-{n}` on `schedule`, each run
/// appended to `runs`. The fire bench and the live run name their jobs apart: the fire
/// bench claims ticks a year ahead, and a job's record refuses every tick up to the last
/// one it claimed.
fn scheduler(
    url: &str,
    node: &str,
    jobs: &str,
    schedule: &Schedule,
    runs: &Runs,
) -> AsyncScheduler<RedisBackend> {
    let options = LeaderElectionOptions::default().with_node_id(node);
    let elector = AsyncLeaderElector::new(backend(url), options).unwrap();
    let mut scheduler = AsyncScheduler::new(elector);
    for job in 0..JOBS {
        let runs = Arc::clone(runs);
        let config = JobConfig::new(schedule.clone()).with_clock_skew(Duration::from_millis(200));
        scheduler
            .add(&format!("{jobs}-{job}"), config, move |run| {
                let late = SystemTime::now()
                    .duration_since(run.tick())
                    .unwrap_or_default();
                let tick = run.tick().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
                runs.lock().push((job, tick, late));
                async { Ok(()) }
            })
            .unwrap();
    }
    scheduler
}

fn fire(c: &mut Criterion, url: &str) {
    let rt = runtime();
    let hourly = Schedule::every(Duration::from_secs(3600)).unwrap();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let scheduler = rt.block_on(async { scheduler(url, "bench", "fired", &hourly, &runs) });
    let next_tick = std::cell::Cell::new(
        hourly.next_after(SystemTime::now()).unwrap() + Duration::from_secs(3600 * 24 * 365),
    );
    let client = redis::Client::open(url).unwrap();
    let conn = rt
        .block_on(client.get_multiplexed_async_connection())
        .unwrap();

    let fire_all = || {
        // A tick no firing has claimed yet: an hour after the last one.
        let tick = next_tick.get() + Duration::from_secs(3600);
        next_tick.set(tick);
        let fired = rt.block_on(futures_util::future::join_all((0..JOBS).map(|job| {
            let name = format!("fired-{job}");
            let scheduler = &scheduler;
            async move { scheduler.fire(&name, tick).await.unwrap() }
        })));
        assert!(fired.iter().all(|ran| *ran));
    };
    let floor = || {
        rt.block_on(futures_util::future::join_all((0..JOBS).map(|_| {
            let mut conn = conn.clone();
            async move {
                for _ in 0..5 {
                    let _: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
                }
            }
        })));
    };
    let mut group = c.benchmark_group("schedule");
    group.sample_size(10);
    group.bench_function("redis-1000-jobs-fire", |b| b.iter(fire_all));
    group.bench_function("redis-1000-floor", |b| b.iter(floor));
    group.finish();
    let mut cases: Vec<leader_benches::Case<'_>> = vec![
        ("1000 jobs fired", Box::new(fire_all)),
        ("floor: 1000 x 5 PINGs", Box::new(floor)),
    ];
    let medians = leader_benches::interleaved("schedule", 20, &mut cases);
    println!(
        "schedule fire: 1000 jobs {:.1} ms, floor {:.1} ms: {:.2}x the floor (medians of 20 interleaved rounds)",
        medians[0].as_secs_f64() * 1e3,
        medians[1].as_secs_f64() * 1e3,
        ratio(medians[0], medians[1])
    );
}

fn live(url: &str) {
    let every_second = Schedule::every(Duration::from_secs(1)).unwrap();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let shutdown = Shutdown::new();
    let mut server = redis::Client::open(url).unwrap().get_connection().unwrap();
    let before = leader_benches::redis_command_stats(&mut server);
    let cpu_before = leader_benches::process_cpu_time();
    let started = Instant::now();
    let nodes: Vec<_> = (0..NODES)
        .map(|n| {
            let (url, runs, shutdown, every) = (
                url.to_owned(),
                Arc::clone(&runs),
                shutdown.clone(),
                every_second.clone(),
            );
            std::thread::spawn(move || {
                let rt = runtime();
                rt.block_on(async move {
                    let scheduler = scheduler(&url, &format!("node-{n}"), "live", &every, &runs);
                    scheduler.run(&shutdown).await;
                });
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(LIVE_TICKS) + Duration::from_millis(500));
    shutdown.trigger();
    for node in nodes {
        node.join().unwrap();
    }
    let elapsed = started.elapsed();
    let cpu = cpu_before
        .zip(leader_benches::process_cpu_time())
        .map(|(a, b)| b - a);
    let after = leader_benches::redis_command_stats(&mut server);
    let runs = runs.lock().clone();
    let mut seen = HashSet::new();
    let twice = runs
        .iter()
        .filter(|(job, tick, _)| !seen.insert((*job, *tick)))
        .count();
    let ticks: HashSet<u64> = runs.iter().map(|(_, tick, _)| *tick).collect();
    let full_ticks = ticks
        .iter()
        .filter(|tick| runs.iter().filter(|(_, t, _)| t == *tick).count() == JOBS)
        .count();
    let mut lateness: Vec<Duration> = runs.iter().map(|(_, _, late)| *late).collect();
    lateness.sort();
    let calls: u64 =
        after.iter().map(|(_, c)| *c).sum::<u64>() - before.iter().map(|(_, c)| *c).sum::<u64>();
    let delta = |name: &str| {
        let of =
            |stats: &[(String, u64)]| stats.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c);
        of(&after) - of(&before)
    };
    let job_ticks = (runs.len().max(1)) as f64;
    println!(
        "schedule live: {NODES} nodes x {JOBS} jobs every 1 s for {:.1} s: {} runs over {} ticks ({full_ticks} with every job), {twice} ran twice",
        elapsed.as_secs_f64(),
        runs.len(),
        ticks.len()
    );
    println!(
        "  round trips the server saw per job per tick (all nodes): EVALSHA {:.2}, HGET/HMGET-like reads {:.2}; every command {:.2}",
        delta("evalsha") as f64 / job_ticks,
        (delta("hmget") + delta("hget") + delta("get")) as f64 / job_ticks,
        calls as f64 / job_ticks
    );
    if let Some(cpu) = cpu {
        println!(
            "  CPU of the three nodes: {:.1} ms per tick ({:.1} µs per job per tick), load 3 runtimes on 2 cores",
            cpu.as_secs_f64() * 1e3 / ticks.len().max(1) as f64,
            cpu.as_secs_f64() * 1e6 / job_ticks
        );
    }
    println!(
        "  tick lateness (run start - tick): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&lateness, 50).as_secs_f64() * 1e3,
        percentile(&lateness, 99).as_secs_f64() * 1e3,
        lateness.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
}

fn main() {
    let Some(server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let url = server.url();
    let mut c = Criterion::default().configure_from_args();
    fire(&mut c, &url);
    live(&url);
    c.final_summary();
}
