//! A service configured by URL: the backend comes from `LEADER_URL` (`memory://` when unset),
//! so the same binary runs against Redis, a Redis Cluster or MongoDB by configuration alone.
//! Every tick each replica tries the job; one runs it. Stops on Ctrl-C or after 10 ticks.
//!
//! ```text
//! cargo run -p leader-examples --features tokio --example tokio-url-service
//! LEADER_URL=redis://127.0.0.1/ cargo run -p leader-examples --features tokio,redis --example tokio-url-service
//! LEADER_URL=mongodb://127.0.0.1/ cargo run -p leader-examples --features tokio,mongodb --example tokio-url-service
//! ```
//!
//! A URL whose backend was not compiled in is a clear error: `redis://` URLs need the `redis`
//! feature of the `leader` crate.

use std::time::Duration;

use leader::{AnyBackend, AsyncLeaderElector, Error, LeaderElectionOptions, LeaderRunResult};

const TICKS: u32 = 10;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("LEADER_URL").unwrap_or_else(|_| "memory://".into());
    let backend = leader::connect_async(&url).await?;
    println!("backend: {} ({url})", backend.kind());

    let mut replicas = Vec::new();
    for i in 0..3 {
        let options = LeaderElectionOptions::default()
            .with_node_id(format!("replica-{i}"))
            .with_wait_time(Duration::ZERO)
            .with_lease_time(Duration::from_secs(5))
            .with_min_lease_time(Duration::from_millis(200)); // at most one run per tick
        let elector = AsyncLeaderElector::new(backend.clone(), options)?;
        replicas.push(tokio::spawn(replica(elector)));
    }
    tokio::select! {
        _ = tokio::signal::ctrl_c() => println!("interrupted"),
        _ = futures_join(replicas) => {}
    }
    Ok(())
}

async fn futures_join(replicas: Vec<tokio::task::JoinHandle<Result<(), Error>>>) {
    for replica in replicas {
        match replica.await {
            Ok(Err(err)) => eprintln!("replica stopped: {err}"),
            Err(err) => eprintln!("replica task failed: {err}"),
            Ok(Ok(())) => {}
        }
    }
}

async fn replica(elector: AsyncLeaderElector<AnyBackend>) -> Result<(), Error> {
    let node = elector.options().node_id().to_owned();
    let mut ticks = tokio::time::interval(Duration::from_millis(300));
    for tick in 1..=TICKS {
        ticks.tick().await;
        let outcome = elector
            .run_if_leader_with("refresh-search-index", |lease| async move {
                Ok::<_, Error>(lease.fencing_token())
            })
            .await;
        match outcome {
            Ok(LeaderRunResult::Elected { value: token, .. }) => {
                println!("tick {tick}: {node} ran the job (fencing token {token})")
            }
            Ok(_) => {}
            // A backend outage fails closed: nobody runs the job this tick; try the next.
            Err(err) => eprintln!("tick {tick}: {node}: {err}"),
        }
    }
    Ok(())
}
