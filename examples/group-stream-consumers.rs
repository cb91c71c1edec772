//! N consumers of a partitioned stream: five instances campaign for a group of three
//! slots, each leader consumes the partition of its slot, and when one crashes a standby
//! takes over its partition. On the embedded SQLite backend: no server.
//!
//! ```text
//! cargo run -p leader-examples --example group-stream-consumers
//! ```

use std::time::Duration;

use leader::{CampaignConfig, LeaderElectionOptions, LeaderElector, LeadershipHandle};

const PARTITIONS: u32 = 3;
const INSTANCES: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("leader-consumers-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let backend = leader::connect(&format!("sqlite://{}", dir.join("locks.db").display()))?;
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(2))
        .with_heartbeat(Duration::from_millis(500))
        .with_poll_interval(Duration::from_millis(200));

    let mut instances: Vec<LeadershipHandle> = (0..INSTANCES)
        .map(|n| {
            let options = LeaderElectionOptions::default().with_node_id(format!("consumer-{n}"));
            LeaderElector::new(backend.clone(), options)?
                .group(PARTITIONS)?
                .campaign("orders-stream", config)
        })
        .collect::<Result<_, _>>()?;

    std::thread::sleep(Duration::from_secs(1));
    report(&instances);

    // The consumer of one partition crashes (it stops without releasing): once its lease
    // runs out, a standby takes that partition over.
    let crashed = instances
        .iter()
        .position(|handle| handle.is_leader())
        .ok_or("nobody leads")?;
    let handle = instances.remove(crashed);
    let partition = handle.term().map(|term| term.slot());
    println!(
        "{} crashes, leaving partition {partition:?}",
        handle.node_id()
    );
    handle.abandon();
    std::thread::sleep(config.lease_time() + Duration::from_secs(1));
    report(&instances);

    for handle in instances {
        handle.resign();
    }
    std::fs::remove_dir_all(dir)?;
    Ok(())
}

/// Who consumes which partition, with the fencing token to pass along with its writes.
fn report(instances: &[LeadershipHandle]) {
    for handle in instances {
        match handle.term() {
            Some(term) => println!(
                "  {} consumes partition {} (fencing token {})",
                handle.node_id(),
                term.slot(),
                term.fencing_token()
            ),
            None => println!("  {} stands by", handle.node_id()),
        }
    }
}
