//! SQLite across three processes on one database file: how many acquire + release cycles
//! a second the three do together, each on a lock of its own, against the same three
//! processes running the raw floor on the same file.
//!
//! - floor: each process loops `BEGIN IMMEDIATE; INSERT; COMMIT` then `BEGIN IMMEDIATE;
//!   DELETE; COMMIT` on a table of its own row per lock, with the backend's pragmas (WAL,
//!   `synchronous = NORMAL`), a busy timeout and the statements prepared once
//!   (`prepare_cached`): the two write transactions a cycle costs at least, every process
//!   waiting for the file's one write lock in turn;
//! - elector: each process loops `LeaderElector::run_if_leader` (try once, an empty
//!   action) on its own lock, on a `SqliteBackend` of the file.
//!
//! The processes are this bench binary started again as children (`LEADER_BENCH_SQLITE`
//! tells a child what to run); they start together at an instant the parent sets, run for
//! `SECONDS`, and print their counts. The two cases alternate over `ROUNDS` rounds, so
//! load from elsewhere hits both alike; the goal line is the median round's ratio.
//!
//! ```text
//! cargo bench -p leader-benches --bench sqlite
//! taskset -c 0 cargo bench -p leader-benches --bench sqlite   # every process on one core
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leader_benches::{goal_at_least, try_once_options};
use leader_blocking::LeaderElector;
use leader_sqlite::SqliteBackend;
use rusqlite::{Connection, TransactionBehavior, params};

const PROCESSES: usize = 3;
const SECONDS: u64 = 3;
const ROUNDS: usize = 5;
const WORKER_ENV: &str = "LEADER_BENCH_SQLITE";

fn now_micros() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros(),
    )
    .unwrap()
}

/// The floor's connection: the backend's pragmas and a busy timeout.
fn raw_connection(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn
}

/// One child: waits for `start` (µs since the epoch), runs its case for `SECONDS`, and
/// prints how many cycles it did.
fn worker(spec: &str) -> ! {
    let mut words = spec.split(' ');
    let (case, path, index, start) = (
        words.next().unwrap(),
        Path::new(words.next().unwrap()),
        words.next().unwrap(),
        words.next().unwrap().parse::<u64>().unwrap(),
    );
    let name = format!("bench-sqlite-{index}");
    let mut cycle: Box<dyn FnMut()> = match case {
        "floor" => {
            let mut conn = raw_connection(path);
            Box::new(move || {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .unwrap();
                tx.prepare_cached("INSERT INTO bench_locks (name, owner) VALUES (?1, ?2)")
                    .unwrap()
                    .execute(params![name, "owner"])
                    .unwrap();
                tx.commit().unwrap();
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .unwrap();
                tx.prepare_cached("DELETE FROM bench_locks WHERE name = ?1")
                    .unwrap()
                    .execute(params![name])
                    .unwrap();
                tx.commit().unwrap();
            })
        }
        "elector" => {
            let backend = SqliteBackend::open(path).unwrap();
            let elector = LeaderElector::new(backend, try_once_options()).unwrap();
            Box::new(move || {
                assert_eq!(elector.run_if_leader(&name, || 1u8).unwrap(), Some(1));
            })
        }
        other => panic!("no case {other}"),
    };
    while now_micros() < start {
        std::thread::sleep(Duration::from_micros(200));
    }
    let until = Instant::now() + Duration::from_secs(SECONDS);
    let mut cycles = 0u64;
    while Instant::now() < until {
        cycle();
        cycles += 1;
    }
    println!("{cycles}");
    std::process::exit(0);
}

/// Cycles a second of `case` over `PROCESSES` children on `path`.
fn round(case: &str, path: &Path) -> f64 {
    // Time for every child to start and open the file before the run begins.
    let start = now_micros() + 1_500_000;
    let children: Vec<_> = (0..PROCESSES)
        .map(|index| {
            Command::new(std::env::current_exe().unwrap())
                .env(
                    WORKER_ENV,
                    format!("{case} {} {index} {start}", path.display()),
                )
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut total = 0u64;
    for mut child in children {
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(child.wait().unwrap().success(), "a {case} worker failed");
        total += line.trim().parse::<u64>().unwrap();
    }
    total as f64 / SECONDS as f64
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    if let Ok(spec) = std::env::var(WORKER_ENV) {
        worker(&spec);
    }
    if leader_benches::name_filter_given() {
        return; // no criterion cases: the whole bench is the three-process run
    }
    let dir = std::env::temp_dir().join(format!("leader-bench-sqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("locks.db");
    raw_connection(&path)
        .execute_batch("CREATE TABLE bench_locks (name TEXT PRIMARY KEY, owner TEXT NOT NULL)")
        .unwrap();
    // The backend's tables, made once before the processes race to open the file.
    drop(SqliteBackend::open(&path).unwrap());
    let mut floors = Vec::with_capacity(ROUNDS);
    let mut electors = Vec::with_capacity(ROUNDS);
    let mut ratios = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let floor = round("floor", &path);
        let elector = round("elector", &path);
        println!(
            "sqlite/3 processes  floor {floor:>9.0} cycles/s  elector {elector:>9.0} cycles/s  {:.2}x",
            elector / floor
        );
        floors.push(floor);
        electors.push(elector);
        ratios.push(elector / floor);
    }
    println!(
        "sqlite/3 processes  median floor {:.0} cycles/s, elector {:.0} cycles/s",
        median(floors),
        median(electors)
    );
    goal_at_least(
        "sqlite run_if_leader cycles/s across 3 processes ÷ raw BEGIN IMMEDIATE insert + delete",
        median(ratios),
        0.9,
        "x",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
