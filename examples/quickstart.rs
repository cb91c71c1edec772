//! Three processes on one host share one SQLite file and schedule the same job every
//! second: each tick runs on exactly one of them, whichever process's timer fires first.
//! No server.
//!
//! ```text
//! cargo run -p leader-examples --example quickstart
//! ```
//!
//! The example starts copies of itself (`quickstart node <n> <database>`); each runs a
//! scheduler with the job `nightly-report` on the cron pattern `* * * * * *` (every
//! second, standing in for a nightly `0 0 2 * * *`) for six seconds and prints each tick
//! it ran, with the fencing token of that run. The parent prints the runs in tick order:
//! one per tick, tokens only going up, whichever process ran it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leader::schedule::{JobConfig, Schedule, Scheduler, Shutdown};
use leader::{LeaderElectionOptions, LeaderElector};

const PROCESSES: usize = 3;
const RUN_FOR: Duration = Duration::from_secs(6);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, command, node, database] = args.as_slice()
        && command == "node"
    {
        return node_main(node, Path::new(database));
    }
    let dir = std::env::temp_dir().join(format!("leader-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let database = dir.join("locks.db");
    println!("{PROCESSES} processes share {}", database.display());

    let children: Vec<_> = (0..PROCESSES)
        .map(|n| {
            Command::new(std::env::current_exe()?)
                .args(["node", &n.to_string()])
                .arg(&database)
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
    for line in &lines {
        println!("{line}");
    }
    println!("{} ticks, each run by one process", lines.len());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// One process: schedule the job, run it when this process claims a tick.
fn node_main(node: &str, database: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let backend = leader::connect(&format!("sqlite://{}", database.display()))?;
    let options =
        LeaderElectionOptions::default().with_node_id(format!("process-{}", std::process::id()));
    let mut scheduler = Scheduler::new(LeaderElector::new(backend, options)?);
    let every_second = Schedule::cron("* * * * * *")?;
    let node = node.to_owned();
    scheduler.add("nightly-report", JobConfig::new(every_second), move |run| {
        std::thread::sleep(Duration::from_millis(30)); // the job
        println!(
            "tick {}: node {node} (pid {}) ran it, fencing token {}",
            seconds(run.tick()),
            std::process::id(),
            run.fencing_token()
        );
        Ok(())
    })?;
    let shutdown = Shutdown::new();
    let stop = shutdown.clone();
    std::thread::spawn(move || {
        std::thread::sleep(RUN_FOR);
        stop.trigger();
    });
    scheduler.run(&shutdown); // returns once the running job (if any) finished
    Ok(())
}

/// A tick as seconds since the epoch.
fn seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
