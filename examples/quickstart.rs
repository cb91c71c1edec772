//! Three processes on one host share one SQLite file and run the same nightly job, round
//! after round: in each round one of them leads and runs it, the others skip. No server.
//!
//! ```text
//! cargo run -p leader-examples --example quickstart
//! ```
//!
//! The example starts copies of itself (`quickstart node <n> <database> <first round>`); each
//! prints, per
//! round, whether it led and under which fencing token. The tokens only go up, whichever
//! process holds the lock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leader::{LeaderElectionOptions, LeaderElector};

const PROCESSES: usize = 3;
const ROUNDS: u64 = 6;
const ROUND: Duration = Duration::from_millis(500);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, command, node, database, first] = args.as_slice()
        && command == "node"
    {
        return node_main(node, Path::new(database), first.parse()?);
    }
    let dir = std::env::temp_dir().join(format!("leader-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let database = dir.join("locks.db");
    println!("{PROCESSES} processes share {}", database.display());
    // One schedule for all: the rounds start on the same wall-clock boundaries.
    let first = current_round() + 2;

    let children: Vec<_> = (0..PROCESSES)
        .map(|n| {
            Command::new(std::env::current_exe()?)
                .args(["node", &n.to_string()])
                .arg(&database)
                .arg(first.to_string())
                .stdout(Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut lines = Vec::new();
    for mut child in children {
        let stdout = child.stdout.take().expect("piped");
        lines.extend(BufReader::new(stdout).lines().map_while(Result::ok));
        child.wait()?;
    }
    lines.sort();
    for line in lines {
        println!("{line}");
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// One process: every round, on the round's boundary, try the job once.
fn node_main(node: &str, database: &Path, first: u64) -> Result<(), Box<dyn std::error::Error>> {
    let backend = leader::connect(&format!("sqlite://{}", database.display()))?;
    let options = LeaderElectionOptions::default()
        .with_node_id(format!("process-{}", std::process::id()))
        .with_wait_time(Duration::ZERO) // try once: contention means skip
        .with_lease_time(Duration::from_secs(10))
        // Keep the lock until just before the round ends, so a process that starts the
        // round a few milliseconds late finds it taken and skips this round's job.
        .with_min_lease_time(ROUND - Duration::from_millis(100));
    let elector = LeaderElector::new(backend, options)?;
    for round in first..first + ROUNDS {
        sleep_until_round(round);
        let outcome = elector.run_if_leader_with("nightly-report", |lease| {
            std::thread::sleep(Duration::from_millis(30)); // the job
            Ok::<_, leader::Error>(lease.fencing_token())
        })?;
        let number = round - first + 1;
        match outcome.fencing_token() {
            Some(token) => println!(
                "round {number}: node {node} (pid {}) led, fencing token {token}",
                std::process::id()
            ),
            None => println!("round {number}: node {node} skipped"),
        }
    }
    Ok(())
}

fn millis_since_epoch() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis())
}

fn current_round() -> u64 {
    u64::try_from(millis_since_epoch() / ROUND.as_millis()).unwrap_or(0)
}

fn sleep_until_round(round: u64) {
    let start = u128::from(round) * ROUND.as_millis();
    let now = millis_since_epoch();
    if start > now {
        let wait = u64::try_from(start - now).unwrap_or(0);
        std::thread::sleep(Duration::from_millis(wait));
    }
}
