//! The client's instructions per cycle, counted by callgrind: steady where this machine's
//! timings are not (the same count from run to run, whatever the load), so a change to the
//! client's path shows here even when a timed bench cannot see it.
//!
//! Redis: four cases, each one acquire + release on a lock of its own against a
//! redis-server of the bench's own (`leader_rig::fixtures`):
//!
//! - async raw: the backend's two scripts, built once and sent with EVALSHA on one
//!   multiplexed connection (a tokio current-thread runtime), the floor of the async
//!   elector; the floor of `--bench concurrency`;
//! - async `AsyncLeaderElector::run_if_leader` with an empty action;
//! - blocking raw: the same two scripts on one blocking connection;
//! - blocking `LeaderElector::run_if_leader`.
//!
//! PostgreSQL (a server of the bench's own, when one is installed): the same four, the raw
//! cases being the backend's two statements, prepared once and sent on one connection
//! whose driver runs on a one-worker runtime (`leader_benches::postgres_floor`), awaited
//! from a current-thread runtime (async) or with `block_on` from the bench thread
//! (blocking), as `--bench postgres` does. Beside each count, the context switches a
//! cycle makes (every thread of the process, counted from `/proc` in a run without
//! valgrind): where the client and a server share one core (`taskset -c 0`), each is a
//! hand-over of that core, a cost that instructions do not show.
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
//! # keep each run's profile, then compare a case's two runs function by function:
//! LEADER_BENCH_CALLGRIND_OUT=/tmp/cg cargo bench -p leader-benches --bench instructions
//! callgrind_annotate --inclusive=yes /tmp/cg/callgrind.out.pg-blocking-elector.3000
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use leader_async::AsyncLeaderElector;
use leader_benches::postgres_floor::Floor;
use leader_benches::redis_floor::{load_scripts, raw_cycle};
use leader_benches::try_once_options;
use leader_blocking::LeaderElector;
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_redis::RedisBackend;
use leader_rig::fixtures::{self, PostgresServer, RedisServer};

/// The environment a child reads: which case, how many cycles, which server.
const CASE: &str = "LEADER_BENCH_INSTRUCTIONS_CASE";
const CYCLES: &str = "LEADER_BENCH_INSTRUCTIONS_CYCLES";
const URL: &str = "LEADER_BENCH_INSTRUCTIONS_URL";
/// Where to keep each run's callgrind profile (none kept when unset).
const OUT_DIR: &str = "LEADER_BENCH_CALLGRIND_OUT";
/// Set in a child run without valgrind: print the context switches of its cycles.
const SWITCHES: &str = "LEADER_BENCH_INSTRUCTIONS_SWITCHES";

/// The lock table of the PostgreSQL cases.
const PG_TABLE: &str = "bench_instructions";

/// The cycle counts of a case's two runs.
const SHORT: u64 = 1000;
const LONG: u64 = 3000;

/// The Redis cases, in the order printed: (label, the name a child knows it by).
const CASES: [(&str, &str); 4] = [
    ("async raw: 2x EVALSHA       ", "async-raw"),
    ("async run_if_leader         ", "async-elector"),
    ("blocking raw: 2x EVALSHA    ", "blocking-raw"),
    ("blocking run_if_leader      ", "blocking-elector"),
];

/// The PostgreSQL cases, as [`CASES`].
const PG_CASES: [(&str, &str); 4] = [
    ("async raw: 2 statements     ", "pg-async-raw"),
    ("async run_if_leader         ", "pg-async-elector"),
    ("blocking raw: 2 statements  ", "pg-blocking-raw"),
    ("blocking run_if_leader      ", "pg-blocking-elector"),
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
        pg if pg.starts_with("pg-") => run_postgres_case(pg, cycles, url),
        other => panic!("no case {other}"),
    }
}

/// Runs `cycles` cycles of the PostgreSQL `case` against the server at `url`.
fn run_postgres_case(case: &str, cycles: u64, url: &str) {
    let backend = || PostgresBackend::connect_with(url, PostgresConfig::new().with_table(PG_TABLE));
    // The backend makes the table the raw statements need.
    let elector = LeaderElector::new(backend().unwrap(), try_once_options()).unwrap();
    assert!(
        elector
            .run_if_leader("instructions-setup", || ())
            .unwrap()
            .is_some()
    );
    let counted = |cycle: &mut dyn FnMut()| {
        let before = context_switches();
        (0..cycles).for_each(|_| cycle());
        if std::env::var_os(SWITCHES).is_some() {
            println!("switches {}", context_switches() - before);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match case {
        "pg-async-raw" => {
            let floor = Floor::new(url, PG_TABLE);
            counted(&mut || runtime.block_on(floor.cycle_async()));
        }
        "pg-async-elector" => {
            let elector = AsyncLeaderElector::new(backend().unwrap(), try_once_options()).unwrap();
            counted(&mut || {
                let ran =
                    runtime.block_on(elector.run_if_leader("instructions-async", || async {}));
                assert!(ran.unwrap().is_some(), "a lock of its own");
            });
        }
        "pg-blocking-raw" => {
            let floor = Floor::new(url, PG_TABLE);
            counted(&mut || floor.cycle());
        }
        "pg-blocking-elector" => counted(&mut || {
            let ran = elector.run_if_leader("instructions-blocking", || ());
            assert!(ran.unwrap().is_some(), "a lock of its own");
        }),
        other => panic!("no case {other}"),
    }
}

/// The context switches every thread of this process made so far, voluntary or not
/// (`/proc/self/task/*/status`).
fn context_switches() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .map(|status| {
            status
                .lines()
                .filter_map(|line| {
                    let (field, value) = line.split_once(':')?;
                    field
                        .ends_with("ctxt_switches")
                        .then(|| value.trim().parse::<u64>().ok())?
                })
                .sum::<u64>()
        })
        .sum()
}

/// The context switches per cycle of `case`, from a child run of [`LONG`] cycles without
/// valgrind.
fn switches_per_cycle(case: &str, url: &str) -> f64 {
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CASE, case)
        .env(CYCLES, LONG.to_string())
        .env(URL, url)
        .env(SWITCHES, "1")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{case}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let switches: u64 = String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("switches ")?.parse().ok())
        .unwrap_or_else(|| panic!("{case} printed no switch count"));
    switches as f64 / LONG as f64
}

/// Counts the instructions of each of `cases` against `url` and prints them under `store`,
/// each elector against the raw case before it; with `switches`, each case's context
/// switches per cycle beside.
fn count(store: &str, cases: &[(&str, &str)], url: &str, switches: bool) {
    let per_cycle: Vec<f64> = cases
        .iter()
        .map(|(_, case)| {
            let short = instructions(case, SHORT, url);
            let long = instructions(case, LONG, url);
            long.saturating_sub(short) as f64 / (LONG - SHORT) as f64
        })
        .collect();
    for (index, ((label, case), count)) in cases.iter().zip(&per_cycle).enumerate() {
        let floor = per_cycle[index - index % 2];
        let switched = if switches {
            format!("  {:.2} context switches", switches_per_cycle(case, url))
        } else {
            String::new()
        };
        println!(
            "instructions/{store} cycle  {label} {count:>8.0} instructions  {:.2}x raw{switched}",
            count / floor
        );
    }
}

/// The instructions callgrind counts in a child that runs `cycles` cycles of `case`.
fn instructions(case: &str, cycles: u64, url: &str) -> u64 {
    // With `LEADER_BENCH_CALLGRIND_OUT=<dir>`, each run's profile is kept there, for
    // `callgrind_annotate`.
    let out_file = std::env::var(OUT_DIR).map_or_else(
        |_| "/dev/null".to_owned(),
        |dir| format!("{dir}/callgrind.out.{case}.{cycles}"),
    );
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={out_file}"))
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
    if let Some(server) = fixtures::require("redis-server", RedisServer::start()) {
        let url = server.url();
        load_scripts(&url).unwrap();
        count("redis", &CASES, &url, false);
    }
    if let Some(server) = fixtures::require("postgres", PostgresServer::start()) {
        count("postgres", &PG_CASES, &server.url(), true);
    }
}
