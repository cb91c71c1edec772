//! Three processes of four threads each contend for one lock on one database file for a
//! few seconds. Each holder counts itself in and out on a second file, in the same
//! transaction as it records its fencing token: nobody ever finds another holder inside,
//! and the tokens, in the order they were recorded, strictly increase.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::TempDir;
use leader_blocking::LeaderElector;
use leader_core::LeaderElectionOptions;
use leader_sqlite::SqliteBackend;
use rusqlite::Connection;

const PROCESSES: usize = 3;
const THREADS: usize = 4;
const RUN_FOR: Duration = Duration::from_secs(4);
const CHILD: &str = "LEADER_SQLITE_PROCESS_DIR";

fn witness(dir: &Path) -> Connection {
    let conn = Connection::open(dir.join("witness.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    conn
}

/// One holder's visit: in, record the token, out. Returns how many were inside with it.
fn visit(conn: &Connection, token: u64, process: u32) -> i64 {
    let inside: i64 = conn
        .query_row("UPDATE inside SET n = n + 1 RETURNING n - 1", [], |row| {
            row.get(0)
        })
        .unwrap();
    conn.execute(
        "INSERT INTO tokens (token, process) VALUES (?1, ?2)",
        rusqlite::params![i64::try_from(token).unwrap(), process],
    )
    .unwrap();
    std::thread::sleep(Duration::from_micros(rand::random_range(0..2_000)));
    conn.execute("UPDATE inside SET n = n - 1", []).unwrap();
    inside
}

/// The child: four threads, each with its own elector on the shared file.
fn contend(dir: &Path) {
    let process = std::process::id();
    let backend = SqliteBackend::open(dir.join("locks.db")).unwrap();
    let threads: Vec<_> = (0..THREADS)
        .map(|thread| {
            let backend = backend.clone();
            let dir = dir.to_owned();
            std::thread::spawn(move || {
                let witness = witness(&dir);
                let options = LeaderElectionOptions::default()
                    .with_node_id(format!("{process}-{thread}"))
                    .with_wait_time(Duration::ZERO)
                    .with_lease_time(Duration::from_secs(10));
                let elector = LeaderElector::new(backend, options).unwrap();
                let deadline = Instant::now() + RUN_FOR;
                let (mut led, mut crowded) = (0_u32, 0_i64);
                while Instant::now() < deadline {
                    let outcome = elector
                        .run_if_leader_with("the-one-job", |lease| {
                            Ok::<_, String>(visit(&witness, lease.fencing_token(), process))
                        })
                        .unwrap();
                    if let Some(others) = outcome.into_value() {
                        led += 1;
                        crowded += others;
                    }
                }
                (led, crowded)
            })
        })
        .collect();
    let (mut led, mut crowded) = (0, 0);
    for thread in threads {
        let (l, c) = thread.join().unwrap();
        led += l;
        crowded += c;
    }
    println!("led={led} crowded={crowded}");
}

#[test]
fn processes_sharing_a_file_never_hold_the_lock_together() {
    if let Some(dir) = std::env::var_os(CHILD) {
        contend(Path::new(&dir));
        return;
    }
    let dir = TempDir::new("processes");
    witness(dir.path())
        .execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE inside (n INTEGER NOT NULL); INSERT INTO inside VALUES (0);
             CREATE TABLE tokens (seq INTEGER PRIMARY KEY AUTOINCREMENT, token INTEGER NOT NULL, process INTEGER NOT NULL);",
        )
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "processes::processes_sharing_a_file_never_hold_the_lock_together",
                    "--nocapture",
                ])
                .env(CHILD, dir.path())
                .output()
        })
        .collect();
    let mut crowded = 0;
    let mut leaders = 0;
    for child in children {
        let output = child.unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "a child failed: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line = stdout.lines().find(|l| l.starts_with("led=")).unwrap();
        let (led, crowd) = line
            .trim_start_matches("led=")
            .split_once(" crowded=")
            .unwrap();
        leaders += usize::from(led.parse::<u32>().unwrap() > 0);
        crowded += crowd.parse::<i64>().unwrap();
    }
    assert_eq!(crowded, 0, "a holder found another inside");
    let conn = witness(dir.path());
    let tokens: Vec<i64> = conn
        .prepare("SELECT token FROM tokens ORDER BY seq")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        tokens.len() >= 50,
        "only {} acquisitions in {RUN_FOR:?}",
        tokens.len()
    );
    assert!(
        tokens.windows(2).all(|pair| pair[0] < pair[1]),
        "fencing tokens went back or repeated"
    );
    assert!(
        leaders >= 2,
        "only {leaders} of {PROCESSES} processes ever led"
    );
    println!(
        "{} acquisitions by {leaders} processes, none overlapping",
        tokens.len()
    );
}
