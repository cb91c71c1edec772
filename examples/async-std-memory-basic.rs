//! The async elector on async-std: two nodes compete, one runs, one skips.
//!
//! ```text
//! cargo run -p leader-examples --features async-std --example async-std-memory-basic
//! ```

use std::time::Duration;

use leader::AsyncLeaderElector;
use leader::{Error, InMemoryBackend, LeaderElectionOptions};

#[async_std::main]
async fn main() -> Result<(), Error> {
    let backend = InMemoryBackend::new();
    let options = |node: &str| {
        LeaderElectionOptions::default()
            .with_node_id(node)
            .with_wait_time(Duration::ZERO)
    };
    let a = AsyncLeaderElector::new(backend.clone(), options("node-a"))?;
    let b = AsyncLeaderElector::new(backend, options("node-b"))?;

    let report = a
        .run_if_leader_result("nightly-report", || async {
            // While node-a holds the lock, node-b skips.
            let skipped = b
                .run_if_leader("nightly-report", || async { "never" })
                .await?;
            println!("node-b while node-a leads: {skipped:?}");
            let state = b.state("nightly-report").await?;
            println!(
                "snapshot: {:?} led by {:?}",
                state.status(),
                state.leader().map(|l| &l.leader_id)
            );
            async_std::task::sleep(Duration::from_millis(10)).await;
            Ok::<_, Error>("report built by node-a")
        })
        .await?;
    println!("node-a: {:?}", report.into_value());
    println!(
        "after release node-b gets: {:?}",
        b.run_if_leader("nightly-report", || async { "node-b ran" })
            .await?
    );
    Ok(())
}
