//! Continuous leadership over Redis: three instances campaign for one stream; the leader
//! "consumes", the others stand by. The example then crashes the leader (it stops without
//! releasing, so a standby takes over when the lease runs out) and finally has the new
//! leader resign gracefully (a standby takes over at once, woken by pub/sub).
//!
//! ```text
//! LEADER_URL=redis://127.0.0.1:6379/ cargo run -p leader-examples --features tokio,redis --example tokio-redis-stream-consumer
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use leader::{AsyncLeaderElector, AsyncLeadershipHandle};
use leader::{
    CampaignConfig, LeaderElectionOptions, LeadershipEvent, LeadershipEvents, LeadershipWatcher,
};

const STREAM: &str = "orders-stream";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("LEADER_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let backend = Arc::new(leader::connect(&url)?);
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(2))
        .with_heartbeat(Duration::from_millis(400))
        .with_poll_interval(Duration::from_millis(200));

    let mut instances = Vec::new();
    for i in 0..3 {
        let options = LeaderElectionOptions::default().with_node_id(format!("consumer-{i}"));
        let elector = AsyncLeaderElector::with_shared_backend(Arc::clone(&backend), options)?;
        let handle = elector.campaign(STREAM, config)?;
        tokio::spawn(print_events(format!("consumer-{i}"), handle.events()));
        tokio::spawn(consume(format!("consumer-{i}"), handle.watcher()));
        instances.push(Some(handle));
    }

    let first = wait_for_leader(&instances).await;
    println!("-- consumer-{first} leads; crashing it (no release) ...");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let crashed_at = Instant::now();
    if let Some(handle) = instances[first].take() {
        handle.abandon().await;
    }
    let second = wait_for_leader(&instances).await;
    println!(
        "-- consumer-{second} took over {:?} after the crash (lease {:?})",
        crashed_at.elapsed(),
        config.lease_time()
    );

    tokio::time::sleep(Duration::from_millis(800)).await;
    println!("-- consumer-{second} resigns gracefully ...");
    let resigned_at = Instant::now();
    if let Some(handle) = instances[second].take() {
        handle.resign().await;
    }
    let third = wait_for_leader(&instances).await;
    println!(
        "-- consumer-{third} took over {:?} after the resignation",
        resigned_at.elapsed()
    );

    tokio::time::sleep(Duration::from_millis(500)).await;
    for handle in instances.into_iter().flatten() {
        handle.resign().await;
    }
    Ok(())
}

/// The work loop: consume while leading; stop the moment the term ends.
async fn consume(node: String, leadership: LeadershipWatcher) {
    loop {
        let term = leadership.wait_for_term().await;
        let mut batch = 0u64;
        loop {
            tokio::select! {
                _ = term.lost() => {
                    println!("{node}: term {} ended after {batch} batches", term.fencing_token());
                    break;
                }
                _ = tokio::time::sleep(Duration::from_millis(250)) => {
                    batch += 1;
                    println!("{node}: consumed batch {batch} (fencing token {})", term.fencing_token());
                }
            }
        }
    }
}

async fn print_events(node: String, events: LeadershipEvents) {
    while let Some(event) = events.recv().await {
        match event {
            LeadershipEvent::Elected { fencing_token } => {
                println!("{node}: elected (fencing token {fencing_token})")
            }
            LeadershipEvent::Revoked { reason } => println!("{node}: revoked: {reason}"),
            LeadershipEvent::LeaderChanged { leader_id } => {
                println!("{node}: sees leader {leader_id:?}")
            }
            other => println!("{node}: {other:?}"),
        }
    }
}

async fn wait_for_leader(instances: &[Option<AsyncLeadershipHandle>]) -> usize {
    loop {
        if let Some(i) = instances
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| h.is_leader()))
        {
            return i;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
