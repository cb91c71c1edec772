//! Five nodes (threads) share one in-memory backend and run the same nightly job for a few
//! rounds: one leads each round, the others skip. Run with:
//!
//! ```text
//! cargo run -p leader-examples --example quickstart
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use leader::LeaderElector;
use leader::{Error, InMemoryBackend, LeaderElectionOptions, LeaderRunResult};

const NODES: usize = 5;
const ROUNDS: usize = 6;

fn main() -> Result<(), Error> {
    let backend = InMemoryBackend::new();
    let electors: Vec<_> = (0..NODES)
        .map(|i| {
            let options = LeaderElectionOptions::default()
                .with_node_id(format!("node-{i}"))
                .with_wait_time(Duration::ZERO) // try once: contention means skip
                .with_lease_time(Duration::from_secs(10));
            LeaderElector::new(backend.clone(), options)
        })
        .collect::<Result<_, _>>()?;

    for round in 1..=ROUNDS {
        let start = Arc::new(Barrier::new(NODES));
        let outcomes = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for (i, elector) in electors.iter().enumerate() {
                let (start, outcomes) = (Arc::clone(&start), &outcomes);
                s.spawn(move || {
                    start.wait();
                    // Nodes start their nightly job at slightly different moments.
                    std::thread::sleep(Duration::from_millis(((i + round * 3) % NODES) as u64));
                    let outcome = elector.run_if_leader_result("nightly-report", || {
                        std::thread::sleep(Duration::from_millis(30)); // the job
                        Ok::<_, Error>(format!("report #{round}"))
                    });
                    outcomes.lock().unwrap().push(outcome);
                });
            }
        });

        let mut skipped = 0;
        for outcome in outcomes.into_inner().unwrap() {
            match outcome? {
                LeaderRunResult::Elected {
                    value,
                    leader_id,
                    fencing_token,
                    ..
                } => {
                    println!(
                        "round {round}: {leader_id} led (fencing token {fencing_token}) and built {value}"
                    );
                }
                LeaderRunResult::Skipped => skipped += 1,
                LeaderRunResult::ActionFailed(err) => {
                    println!("round {round}: the job failed: {err}")
                }
            }
        }
        println!("round {round}: {skipped} node(s) skipped");
    }

    // A best-effort snapshot while someone holds the lock.
    let observer = &electors[0];
    electors[1].run_if_leader("nightly-report", || {
        let state = observer.state("nightly-report").expect("state");
        let leader = state.leader().expect("held right now");
        println!(
            "snapshot: {:?}, led by {} with fencing token {}, lease ends in {:?}",
            state.status(),
            leader.leader_id,
            leader.fencing_token,
            leader
                .expires_at
                .duration_since(std::time::SystemTime::now())
                .unwrap_or_default(),
        );
    })?;
    println!(
        "snapshot after release: {:?}",
        observer.state("nightly-report")?.status()
    );
    Ok(())
}
