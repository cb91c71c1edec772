//! A nightly batch on MongoDB: three instances start at the same moment, one runs the batch
//! under its fencing token, the others skip; then a snapshot shows who led.
//!
//! ```text
//! LEADER_URL=mongodb://127.0.0.1:27017/ cargo run -p leader-examples --features mongodb --example blocking-mongodb-batch
//! ```

use std::sync::{Arc, Barrier};
use std::time::Duration;

use leader::{LeaderElectionOptions, LeaderElector, MongoBackend, MongoConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("LEADER_URL").unwrap_or_else(|_| "mongodb://127.0.0.1:27017/".into());
    // Locks live in the `leader_locks` collection of the `leader` database by default.
    let backend = MongoBackend::connect_with(&url, MongoConfig::new().with_database("ops"))?;

    let start = Arc::new(Barrier::new(3));
    let instances: Vec<_> = (0..3)
        .map(|i| {
            let options = LeaderElectionOptions::default()
                .with_node_id(format!("batch-{i}"))
                .with_wait_time(Duration::ZERO)
                .with_use_db_time(true); // MongoDB's clock decides expiry (it always does)
            let elector = LeaderElector::new(backend.clone(), options);
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let elector = elector?;
                start.wait();
                elector.run_if_leader_with("nightly-batch", |lease| {
                    std::thread::sleep(Duration::from_millis(200)); // the batch
                    Ok::<_, leader::Error>(lease.fencing_token())
                })
            })
        })
        .collect();
    for (i, instance) in instances.into_iter().enumerate() {
        match instance.join().map_err(|_| "an instance panicked")?? {
            outcome if outcome.is_elected() => {
                println!(
                    "batch-{i}: ran the batch, fencing token {:?}",
                    outcome.fencing_token()
                )
            }
            _ => println!("batch-{i}: skipped (another instance led)"),
        }
    }
    let elector = LeaderElector::new(backend, LeaderElectionOptions::default())?;
    let state = elector.state("nightly-batch")?;
    println!("now: {:?}, holder {:?}", state.status(), state.leader());
    Ok(())
}
