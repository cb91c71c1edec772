//! The client's instructions per Redis cycle, counted by callgrind: steady where this
//! machine's timings are not (the same count from run to run, whatever the load), so a
//! change to the client's path shows here even when a timed bench cannot see it.
//!
//! Four cases, each one acquire + release on a lock of its own against a redis-server of
//! the bench's own (`leader_testkit::fixtures`):
//!
//! - async raw: the backend's two scripts, built once and sent with EVALSHA on one
//!   multiplexed connection (a tokio current-thread runtime), the floor of the async
//!   elector; the floor of `--bench concurrency`;
//! - async `AsyncLeaderElector::run_if_leader` with an empty action;
//! - blocking raw: the same two scripts on one blocking connection;
//! - blocking `LeaderElector::run_if_leader`.
//!
//! Each case runs in a child process of this bench under `valgrind --tool=callgrind`,
//! twice, for 1,000 and for 3,000 cycles: the difference over 2,000 cycles is the
//! instructions a cycle costs, without the start-up's (connecting, loading scripts). The
//! raw cases build their commands once, so the elector's extra instructions are all its
//! own work: building the commands, decoding the replies, the lease and its tracking, the
//! operation timeout, tracing. Without valgrind the bench says so and counts nothing.
//!
//! ```text
//! cargo bench -p leader-benches --bench instructions
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use leader_async::AsyncLeaderElector;
use leader_benches::redis_floor::{load_scripts, raw_cycle};
use leader_benches::try_once_options;
use leader_blocking::LeaderElector;
use leader_redis::RedisBackend;
use leader_testkit::fixtures::{self, RedisServer};

/// The environment a child reads: which case, how many cycles, which server.
const CASE: &str = "LEADER_BENCH_INSTRUCTIONS_CASE";
const CYCLES: &str = "LEADER_BENCH_INSTRUCTIONS_CYCLES";
const URL: &str = "LEADER_BENCH_INSTRUCTIONS_URL";

/// The cycle counts of a case's two runs.
const SHORT: u64 = 1000;
const LONG: u64 = 3000;

/// The cases, in the order printed: (label, the name a child knows it by).
const CASES: [(&str, &str); 4] = [
    ("async raw: 2x EVALSHA       ", "async-raw"),
    ("async run_if_leader         ", "async-elector"),
    ("blocking raw: 2x EVALSHA    ", "blocking-raw"),
    ("blocking run_if_leader      ", "blocking-elector"),
];

/// Runs `cycles` cycles of `case` against the server at `url` (the child's work).
fn run_case(case: &str, cycles: u64, url: &str) {
    match case {
        "async-raw" | "async-elector" => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                if case == "async-raw" {
                    let mut conn = redis::Client::open(url)
                        .unwrap()
                        .get_multiplexed_async_connection()
                        .await
                        .unwrap();
                    let (acquire, release) = raw_cycle("leader-bench", "instructions-async");
                    for _ in 0..cycles {
                        acquire
                            .query_async::<redis::Value>(&mut conn)
                            .await
                            .unwrap();
                        release
                            .query_async::<redis::Value>(&mut conn)
                            .await
                            .unwrap();
                    }
                } else {
                    let elector = AsyncLeaderElector::new(
                        RedisBackend::connect(url).unwrap(),
                        try_once_options(),
                    )
                    .unwrap();
                    for _ in 0..cycles {
                        let ran = elector.run_if_leader("instructions-async", || async {});
                        assert!(ran.await.unwrap().is_some(), "a lock of its own");
                    }
                }
            });
        }
        "blocking-raw" => {
            let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
            let (acquire, release) = raw_cycle("leader-bench", "instructions-blocking");
            for _ in 0..cycles {
                acquire.query::<redis::Value>(&mut conn).unwrap();
                release.query::<redis::Value>(&mut conn).unwrap();
            }
        }
        "blocking-elector" => {
            let elector =
                LeaderElector::new(RedisBackend::connect(url).unwrap(), try_once_options())
                    .unwrap();
            for _ in 0..cycles {
                let ran = elector.run_if_leader("instructions-blocking", || ());
                assert!(ran.unwrap().is_some(), "a lock of its own");
            }
        }
        other => panic!("no case {other}"),
    }
}

/// The instructions callgrind counts in a child that runs `cycles` cycles of `case`.
fn instructions(case: &str, cycles: u64, url: &str) -> u64 {
    let output = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(std::env::current_exe().unwrap())
        .env(CASE, case)
        .env(CYCLES, cycles.to_string())
        .env(URL, url)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{case} under callgrind: {log}");
    // callgrind's summary line: "==<pid>== Collected : <instructions>"
    log.lines()
        .find_map(|line| line.split("Collected :").nth(1))
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or_else(|| panic!("no instruction count in callgrind's output: {log}"))
}

fn main() {
    if let Ok(case) = std::env::var(CASE) {
        let cycles = std::env::var(CYCLES).unwrap().parse().unwrap();
        run_case(&case, cycles, &std::env::var(URL).unwrap());
        return;
    }
    if leader_benches::name_filter_given() {
        return;
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("instructions: valgrind is not installed; nothing counted");
        return;
    }
    let Some(server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let url = server.url();
    load_scripts(&url).unwrap();
    let per_cycle: Vec<f64> = CASES
        .iter()
        .map(|(_, case)| {
            let short = instructions(case, SHORT, &url);
            let long = instructions(case, LONG, &url);
            long.saturating_sub(short) as f64 / (LONG - SHORT) as f64
        })
        .collect();
    for (index, ((label, _), count)) in CASES.iter().zip(&per_cycle).enumerate() {
        // Each elector against the raw case before it.
        let floor = per_cycle[index - index % 2];
        println!(
            "instructions/redis cycle  {label} {count:>8.0} instructions  {:.2}x raw",
            count / floor
        );
    }
}
