//! A periodic job inside a tokio service: three elector instances (think: three replicas
//! of the service) share one backend, and every tick exactly one of them runs the job.
//!
//! ```text
//! cargo run -p leader-examples --features tokio --example tokio-memory-service
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use leader::AsyncLeaderElector;
use leader::{Error, InMemoryBackend, LeaderElectionOptions, LeaderRunResult};

const TICKS: u32 = 5;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let backend = Arc::new(InMemoryBackend::new());
    let runs = Arc::new(AtomicU32::new(0));

    let replicas: Vec<_> = (0..3)
        .map(|i| {
            let options = LeaderElectionOptions::default()
                .with_node_id(format!("replica-{i}"))
                .with_wait_time(Duration::ZERO)
                .with_lease_time(Duration::from_secs(5))
                .with_min_lease_time(Duration::from_millis(100)) // one run per tick, even if fast
                .with_auto_extend(true);
            AsyncLeaderElector::with_shared_backend(Arc::clone(&backend), options)
                .map(|elector| tokio::spawn(replica(elector, Arc::clone(&runs))))
        })
        .collect::<Result<_, _>>()?;

    for replica in replicas {
        if let Ok(Err(err)) = replica.await {
            eprintln!("replica stopped: {err}");
        }
    }
    println!("{} runs over {TICKS} ticks", runs.load(Ordering::SeqCst));
    Ok(())
}

/// One replica's scheduler loop: on every tick, try to run the job.
async fn replica(
    elector: AsyncLeaderElector<InMemoryBackend>,
    runs: Arc<AtomicU32>,
) -> Result<(), Error> {
    let node = elector.options().node_id().to_owned();
    let mut ticks = tokio::time::interval(Duration::from_millis(200));
    for tick in 1..=TICKS {
        ticks.tick().await;
        let outcome = elector
            .run_if_leader_with("refresh-exchange-rates", |lease| {
                let runs = Arc::clone(&runs);
                async move {
                    tokio::time::sleep(Duration::from_millis(20)).await; // the job
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Error>(lease.fencing_token())
                }
            })
            .await?;
        match outcome {
            LeaderRunResult::Elected { fencing_token, .. } => {
                println!("tick {tick}: {node} ran the job (fencing token {fencing_token})");
            }
            LeaderRunResult::Skipped => {}
            LeaderRunResult::ActionFailed(err) => {
                eprintln!("tick {tick}: {node}: job failed: {err}")
            }
        }
    }
    Ok(())
}
