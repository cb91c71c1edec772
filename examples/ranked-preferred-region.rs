//! A preferred-region leader: candidates in three regions rank themselves (the primary
//! region highest), the best live one leads, the next one takes over when it goes down,
//! and the primary takes leadership back when it returns. Each candidate is told why it
//! lost leadership. On the embedded SQLite backend: no server.
//!
//! ```text
//! cargo run -p leader-examples --example ranked-preferred-region
//! ```

use std::time::Duration;

use leader::{
    CampaignConfig, EventCallback, LeaderElectionOptions, LeaderElector, LeadershipEvent,
    LeadershipHandle,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("leader-regions-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let backend = leader::connect(&format!("sqlite://{}", dir.join("locks.db").display()))?;
    let start = |region: &str, rank: u32| -> Result<LeadershipHandle, leader::Error> {
        let config = CampaignConfig::default()
            .with_lease_time(Duration::from_secs(2))
            .with_heartbeat(Duration::from_millis(400))
            .with_poll_interval(Duration::from_millis(200))
            .with_rank(rank); // with_preemption(false) keeps a leader until it goes
        let options = LeaderElectionOptions::default().with_node_id(region);
        let region = region.to_owned();
        let log: EventCallback = std::sync::Arc::new(move |event: &LeadershipEvent| match event {
            LeadershipEvent::Elected { fencing_token } => {
                println!("  {region} leads (fencing token {fencing_token})");
            }
            LeadershipEvent::Revoked { reason } => println!("  {region} stepped down: {reason}"),
            _ => {}
        });
        LeaderElector::new(backend.clone(), options)?.campaign_with_callbacks(
            "scheduler",
            config,
            vec![log],
        )
    };

    println!("the regions start, the primary last:");
    let ap = start("ap-south-1", 1)?;
    let us = start("us-east-1", 2)?;
    let eu = start("eu-west-1 (primary)", 3)?;
    std::thread::sleep(Duration::from_secs(2));

    println!("the primary region goes down:");
    eu.abandon();
    std::thread::sleep(Duration::from_secs(4));

    println!("the primary region comes back:");
    let eu = start("eu-west-1 (primary)", 3)?;
    std::thread::sleep(Duration::from_secs(2));

    for handle in [ap, us, eu] {
        handle.resign();
    }
    std::fs::remove_dir_all(dir)?;
    Ok(())
}
