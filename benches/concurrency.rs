//! Many locks per node on Redis: 64 tasks, each cycling on a lock of its own, over one
//! backend value (one multiplexed connection), on a tokio runtime with two workers. Three
//! cases, each run for a few seconds, three rounds in rotating order:
//!
//! - floor: the backend's two scripts sent raw (EVALSHA acquire + release) on one
//!   multiplexed connection;
//! - `AsyncLeaderElector::run_if_leader` with an empty action;
//! - rslock 0.10 `lock` + `unlock` through one `LockManager`.
//!
//! Prints cycles per second for each (the median round), where the time goes (the bench
//! process's CPU per cycle, from `/proc/self/stat`, and the server's, from `INFO cpu`:
//! on two cores the client's CPU is taken from the server's), each case's ceiling (the
//! rate its CPU per cycle allows: the server is one thread, and it shares the cores with
//! the bench process) and the goal lines (÷ rslock ≥ 0.9x, ÷ the floor ≥ 0.95x), each
//! with its limit when it is not met: for ÷ rslock, our rate's ceiling with a client that
//! cost nothing, against rslock's measured rate; for ÷ the floor, the ratio of the two
//! ceilings that their CPU per cycle sets.
//!
//! ```text
//! cargo bench -p leader-benches --bench concurrency
//! taskset -c 0 cargo bench -p leader-benches --bench concurrency
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_async::AsyncLeaderElector;
use leader_benches::redis_floor::{load_scripts, raw_cycle};
use leader_benches::{
    LEASE, goal_at_least_with_limit, process_cpu_time, redis_cpu_time, try_once_options,
};
use leader_redis::RedisBackend;
use leader_rig::fixtures::{self, RedisServer};

const TASKS: usize = 64;
const ROUND: Duration = Duration::from_secs(3);
const ROUNDS: usize = 3;

/// One round of one case: cycles per second (all tasks together), and the CPU per cycle
/// of the bench process and of the server, in microseconds.
#[derive(Debug, Clone, Copy, Default)]
struct Round {
    per_second: f64,
    client_us: f64,
    server_us: f64,
}

/// Runs `cycle(task)` in `TASKS` tasks for `ROUND`, `server` answering `INFO cpu`.
fn throughput<F, Fut>(
    runtime: &tokio::runtime::Runtime,
    server: &mut redis::Connection,
    cycle: F,
) -> Round
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let cycle = Arc::new(cycle);
    let (client_before, server_before) = (process_cpu_time(), redis_cpu_time(server));
    let (cycles, elapsed) = runtime.block_on(async {
        let until = Instant::now() + ROUND;
        let started = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let cycle = Arc::clone(&cycle);
                tokio::spawn(async move {
                    let mut cycles = 0u64;
                    while Instant::now() < until {
                        cycle(task).await;
                        cycles += 1;
                    }
                    cycles
                })
            })
            .collect();
        let mut total = 0u64;
        for task in tasks {
            total += task.await.unwrap();
        }
        (total, started.elapsed())
    });
    let per_cycle = |before: Option<Duration>, after: Option<Duration>| {
        before.zip(after).map_or(f64::NAN, |(a, b)| {
            b.saturating_sub(a).as_secs_f64() * 1e6 / cycles as f64
        })
    };
    Round {
        per_second: cycles as f64 / elapsed.as_secs_f64(),
        client_us: per_cycle(client_before, process_cpu_time()),
        server_us: per_cycle(server_before, redis_cpu_time(server)),
    }
}

/// The most cycles a second that `round`'s CPU per cycle allows: the server runs commands
/// on one thread, so it serves at most one cycle per `server_us`; and the bench process
/// and the server together have the cores this process may run on (one when pinned with
/// `taskset -c 0`, the server with it), at `client_us + server_us` a cycle.
fn ceiling(round: Round) -> f64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let server = 1e6 / round.server_us;
    let shared = cores * 1e6 / (round.client_us + round.server_us);
    server.min(shared)
}

/// Prints each case's [`ceiling`] beside its measured rate: a case near its ceiling is
/// bound by the CPU it costs, the server's or the client's, not by waiting.
fn print_ceilings(cases: &[(&str, Round)]) {
    let line = cases
        .iter()
        .map(|(label, round)| {
            let ceiling = ceiling(*round);
            format!(
                "{label} {ceiling:.0} ({:.2} of it reached)",
                round.per_second / ceiling
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    println!("concurrency/{TASKS} tasks  ceilings from the CPU per cycle, cycles/s: {line}");
}

fn main() {
    if leader_benches::name_filter_given() {
        return;
    }
    let Some(server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let url = server.url();
    load_scripts(&url).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let conn = runtime.block_on(async {
        redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    });
    let floors: Arc<Vec<(redis::Cmd, redis::Cmd)>> = Arc::new(
        (0..TASKS)
            .map(|task| raw_cycle("leader-bench", &format!("many-floor-{task}")))
            .collect(),
    );
    let elector =
        AsyncLeaderElector::new(RedisBackend::connect(&url).unwrap(), try_once_options()).unwrap();
    let names: Arc<Vec<String>> = Arc::new((0..TASKS).map(|t| format!("many-{t}")).collect());
    let rslock = Arc::new(rslock::LockManager::new(vec![url.clone()]));
    let mut info = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();

    let mut results: [Vec<Round>; 3] = Default::default();
    for round in 0..ROUNDS {
        for offset in 0..3 {
            let case = (round + offset) % 3;
            let round = match case {
                0 => {
                    let (conn, floors) = (conn.clone(), Arc::clone(&floors));
                    throughput(&runtime, &mut info, move |task| {
                        let (mut conn, floors) = (conn.clone(), Arc::clone(&floors));
                        async move {
                            let (acquire, release) = &floors[task];
                            acquire
                                .query_async::<redis::Value>(&mut conn)
                                .await
                                .unwrap();
                            release
                                .query_async::<redis::Value>(&mut conn)
                                .await
                                .unwrap();
                        }
                    })
                }
                1 => {
                    let (elector, names) = (elector.clone(), Arc::clone(&names));
                    throughput(&runtime, &mut info, move |task| {
                        let (elector, names) = (elector.clone(), Arc::clone(&names));
                        async move {
                            let ran = elector.run_if_leader(&names[task], || async {}).await;
                            assert!(ran.unwrap().is_some(), "a lock of its own");
                        }
                    })
                }
                _ => {
                    let (rslock, names) = (Arc::clone(&rslock), Arc::clone(&names));
                    throughput(&runtime, &mut info, move |task| {
                        let (rslock, names) = (Arc::clone(&rslock), Arc::clone(&names));
                        async move {
                            let resource = format!("rslock-{}", names[task]);
                            let lock = rslock.lock(resource.as_str(), LEASE).await.unwrap();
                            rslock.unlock(&lock).await;
                        }
                    })
                }
            };
            results[case].push(round);
        }
    }
    // The median round by throughput, with its own CPU figures.
    let median = |rounds: &mut Vec<Round>| {
        rounds.sort_by(|a, b| a.per_second.total_cmp(&b.per_second));
        rounds.get(rounds.len() / 2).copied().unwrap_or_default()
    };
    let [floor, ours, peer] = results.each_mut().map(median);
    for (label, round) in [
        ("floor: raw 2x EVALSHA    ", floor),
        ("async run_if_leader      ", ours),
        ("rslock 0.10 lock + unlock", peer),
    ] {
        println!(
            "concurrency/{TASKS} tasks  {label}  {:>9.0} cycles/s  {:.2}x floor;  CPU per cycle: \
             bench process {:.1} us, server {:.1} us",
            round.per_second,
            round.per_second / floor.per_second,
            round.client_us,
            round.server_us,
        );
    }
    print_ceilings(&[("floor", floor), ("run_if_leader", ours), ("rslock", peer)]);
    // The ÷ rslock goal's limit: a client that cost nothing would still wait for the
    // server's time on our scripts.
    let free_client = ceiling(Round {
        client_us: 0.0,
        ..ours
    });
    let rslock_limit = format!(
        "with a client that cost no CPU, run_if_leader would still do at most \
         {free_client:.0} cycles/s (the server's {:.1} us a cycle against rslock's {:.1}), \
         {:.2}x rslock's measured rate",
        ours.server_us,
        peer.server_us,
        free_client / peer.per_second
    );
    // The ÷ raw goal's limit: each case's CPU per cycle caps its rate, and both run near
    // their caps.
    let floor_limit = format!(
        "the CPU per cycle caps run_if_leader at {:.0} cycles/s ({:.1} us of the bench \
         process's and {:.1} us of the server's a cycle) and the raw scripts at {:.0} ({:.1} \
         and {:.1}): {:.2}x",
        ceiling(ours),
        ours.client_us,
        ours.server_us,
        ceiling(floor),
        floor.client_us,
        floor.server_us,
        ceiling(ours) / ceiling(floor)
    );
    let (ours, floor, peer) = (ours.per_second, floor.per_second, peer.per_second);
    goal_at_least_with_limit(
        "redis 64-task throughput, run_if_leader ÷ rslock",
        ours / peer,
        0.9,
        "x",
        &rslock_limit,
    );
    goal_at_least_with_limit(
        "redis 64-task throughput, run_if_leader ÷ its own raw scripts",
        ours / floor,
        0.95,
        "x",
        &floor_limit,
    );
}
