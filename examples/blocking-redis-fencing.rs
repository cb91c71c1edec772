//! Fencing at the resource: a leader that was paused past its lease cannot overwrite what
//! the next leader wrote.
//!
//! Two nodes compete for the lock `nightly-report` and write the report to Redis through
//! `leader::redis::fence`, each passing the fencing token of its lease. node-a wins, writes,
//! then stalls (a GC pause, a swapped-out process) longer than its one-second lease.
//! node-b acquires the lock once that lease has run out, with a newer token, and writes.
//! When node-a wakes up and writes again, Redis refuses: the report stays node-b's.
//!
//! ```text
//! cargo run -p leader-examples --features redis --example blocking-redis-fencing   # redis://127.0.0.1:6379/
//! LEADER_URL=redis://127.0.0.1:6380/ cargo run -p leader-examples --features redis --example blocking-redis-fencing
//! ```

use std::error::Error;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use leader::redis::fence::{Fence, FenceOutcome};
use leader::redis::redis;
use leader::{LeaderElectionOptions, LeaderElector, LeaderRunResult, LeaseContext, RedisBackend};

const LOCK: &str = "nightly-report";
// One hash tag, so both keys live in one cluster slot.
const FENCE_KEY: &str = "{nightly-report}:fence";
const REPORT_KEY: &str = "{nightly-report}:latest";
const LEASE: Duration = Duration::from_secs(1);
const PATIENCE: Duration = Duration::from_secs(10);

fn main() -> Result<(), Box<dyn Error>> {
    let url = std::env::var("LEADER_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    println!("Redis at {url}");
    let client = redis::Client::open(url.as_str())?;
    let mut con = client.get_connection()?;
    // A fresh resource: no report, no token seen yet.
    redis::cmd("DEL")
        .arg(FENCE_KEY)
        .arg(REPORT_KEY)
        .exec(&mut con)?;

    let elector = |node: &str, wait_time: Duration| -> Result<_, Box<dyn Error>> {
        let options = LeaderElectionOptions::default()
            .with_node_id(node)
            .with_lease_time(LEASE)
            .with_wait_time(wait_time);
        Ok(LeaderElector::new(RedisBackend::connect(&url)?, options)?)
    };
    let node_a = elector("node-a", Duration::ZERO)?;
    // node-b keeps trying for a while: the lock is free once node-a's lease runs out.
    let node_b = elector("node-b", PATIENCE)?;

    let (a_wrote, a_has_written) = mpsc::channel();
    let (b_wrote, b_has_written) = mpsc::channel();
    std::thread::scope(|s| -> Result<(), Box<dyn Error>> {
        let (client, node_b, b_wrote) = (&client, &node_b, &b_wrote);
        let b = s.spawn(move || -> Result<(), Box<dyn Error + Send + Sync>> {
            let mut con = client.get_connection()?;
            a_has_written.recv_timeout(PATIENCE)?;
            let run = node_b.run_if_leader_with(LOCK, |lease| {
                write(&mut con, "node-b", lease, "report by node-b", Some(b_wrote))
            })?;
            report("node-b", run);
            Ok(())
        });

        let mut con = client.get_connection()?;
        let run = node_a.run_if_leader_with(LOCK, |lease| {
            let first = write(
                &mut con,
                "node-a",
                lease,
                "report by node-a",
                Some(&a_wrote),
            )?;
            if !first.is_accepted() {
                return Ok(first); // someone newer has written already: stop here
            }
            lease.check()?;
            println!("node-a: lease checked, still ours; stalls before its second write...");
            // The stall: longer than the lease, and until node-b has written.
            let _ = b_has_written.recv_timeout(PATIENCE);
            println!(
                "node-a: wakes up (lease lost: {}) and writes with its old token",
                lease.is_lost()
            );
            write(&mut con, "node-a", lease, "late report by node-a", None)
        })?;
        report("node-a", run);
        b.join()
            .map_err(|_| "node-b panicked")?
            .map_err(|err| err.to_string())?;
        Ok(())
    })?;

    let fence: Option<String> = redis::cmd("GET").arg(FENCE_KEY).query(&mut con)?;
    let stored: Option<String> = redis::cmd("GET").arg(REPORT_KEY).query(&mut con)?;
    println!("\nstored report: {stored:?}, highest token seen: {fence:?}");
    Ok(())
}

/// A fenced write of the report with the lease's token; tells `done` once it is written.
fn write(
    con: &mut redis::Connection,
    node: &str,
    lease: &LeaseContext,
    report: &str,
    done: Option<&Sender<()>>,
) -> Result<FenceOutcome, Box<dyn Error>> {
    let token = lease.fencing_token();
    let outcome = Fence::new(FENCE_KEY, token)
        .set(REPORT_KEY, report)
        .invoke(con)?;
    match outcome {
        FenceOutcome::Accepted => println!("{node}: wrote {report:?} with token {token}"),
        FenceOutcome::Rejected { highest_seen } => println!(
            "{node}: REFUSED {report:?} with token {token}: token {highest_seen} has written since"
        ),
    }
    if let Some(done) = done {
        let _ = done.send(());
    }
    Ok(outcome)
}

fn report(node: &str, run: LeaderRunResult<FenceOutcome, Box<dyn Error>>) {
    match run {
        LeaderRunResult::Elected {
            value,
            fencing_token,
            lease_lost,
            ..
        } => println!(
            "{node}: led with token {fencing_token}; last write {value:?}; lease lost: {lease_lost}"
        ),
        LeaderRunResult::Skipped => println!("{node}: another node led; skipped"),
        LeaderRunResult::ActionFailed(err) => println!("{node}: failed: {err}"),
    }
}
