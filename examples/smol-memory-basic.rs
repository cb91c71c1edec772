//! The async elector on smol: two nodes compete for one job; one runs it, the other skips,
//! and after the release the other gets its turn.
//!
//! ```text
//! cargo run -p leader-examples --features smol --example smol-memory-basic
//! ```

use std::time::Duration;

use leader::{AsyncLeaderElector, Error, LeaderElectionOptions};

fn main() -> Result<(), Error> {
    smol::block_on(async {
        let backend = leader::InMemoryBackend::new();
        let options = |node: &str| {
            LeaderElectionOptions::default()
                .with_node_id(node)
                .with_wait_time(Duration::ZERO)
        };
        let a = AsyncLeaderElector::new(backend.clone(), options("node-a"))?;
        let b = AsyncLeaderElector::new(backend, options("node-b"))?;

        let b = &b;
        let outcome = a
            .run_if_leader_with("compact-tables", |lease| async move {
                let skipped = b
                    .run_if_leader("compact-tables", || async { "never" })
                    .await?;
                println!("node-b while node-a leads: {skipped:?}");
                smol::Timer::after(Duration::from_millis(10)).await; // the job
                Ok::<_, Error>(format!("compacted under token {}", lease.fencing_token()))
            })
            .await?;
        println!("node-a: {:?}", outcome.into_value());
        let after = b
            .run_if_leader("compact-tables", || async { "node-b ran" })
            .await?;
        println!("after the release node-b gets: {after:?}");
        Ok(())
    })
}
