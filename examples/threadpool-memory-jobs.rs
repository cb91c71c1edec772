//! The thread-pool elector: a scheduler thread submits jobs to a small pool of workers, each
//! job running only where this node wins its lock. The scheduler never blocks on a job: it
//! gets a handle to wait on with a timeout (or to `.await` from async code).
//!
//! ```text
//! cargo run -p leader-examples --example threadpool-memory-jobs
//! ```

use std::time::Duration;

use leader::{LeaderElectionOptions, ThreadPoolLeaderElector};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let backend = leader::connect("memory://")?;
    let options = |node: &str| {
        LeaderElectionOptions::default()
            .with_node_id(node)
            .with_wait_time(Duration::ZERO)
    };
    let node_a = ThreadPoolLeaderElector::new(backend.clone(), options("node-a"), 2)?;
    let node_b = ThreadPoolLeaderElector::new(backend, options("node-b"), 2)?;

    // node-a takes three different jobs at once: two workers run them.
    let jobs = ["rotate-logs", "refresh-cache", "send-digest"];
    let mut handles = Vec::new();
    for job in jobs {
        let handle = node_a.run_async_if_leader_with(job, move |lease| {
            std::thread::sleep(Duration::from_millis(100)); // the job
            Ok::<_, std::io::Error>(format!("{job} done under token {}", lease.fencing_token()))
        })?;
        handles.push((job, handle));
    }
    // node-b tries the same jobs while node-a holds them: each one is skipped.
    std::thread::sleep(Duration::from_millis(20));
    let skipped = node_b
        .run_async_if_leader("rotate-logs", || "node-b ran it")?
        .wait()?;
    println!("node-b on rotate-logs while node-a holds it: {skipped:?}");

    for (job, handle) in handles {
        // Wait a bounded time; a slow job keeps running and can be waited for again.
        while !handle.wait_timeout(Duration::from_millis(50)) {
            println!("{job}: still running");
        }
        println!("node-a: {:?}", handle.wait()?.into_value());
    }
    node_a.shutdown();
    node_b.shutdown();
    Ok(())
}
