//! A must-run critical section that fails closed: the monthly billing run may not be
//! skipped. `with_lock` runs it under a watchdog-renewed lease and returns an error (not a
//! quiet skip) when the lock cannot be had within `wait_time`, so a scheduler retries or
//! pages someone.
//!
//! ```text
//! cargo run -p leader-examples --example blocking-memory-lock-guard
//! ```

use std::time::Duration;

use leader::{Error, LeaderElectionOptions, LeaderElector, LeaseMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let backend = leader::connect("memory://")?;
    let options = |node: &str| {
        LeaderElectionOptions::default()
            .with_node_id(node)
            .with_wait_time(Duration::from_millis(200))
    };
    let a = LeaderElector::new(backend.clone(), options("billing-a"))?;
    let b = LeaderElector::new(backend, options("billing-b"))?;

    let total = a.with_lock("bill-run:2026-11", LeaseMode::watchdog(), |guard| {
        println!(
            "billing-a bills November under fencing token {}",
            guard.fencing_token()
        );

        // Meanwhile billing-b must not run it too: it waits 200 ms, then fails loudly.
        match b.with_lock("bill-run:2026-11", LeaseMode::watchdog(), |_| ()) {
            Err(Error::NotAcquired { .. }) => println!("billing-b: not acquired, will retry later"),
            other => println!("billing-b: unexpected {other:?}"),
        }
        // A long section checks its lease between steps and stops if it was lost.
        for step in ["load usage", "rate", "write invoices"] {
            guard.context().check()?;
            println!("  {step}");
        }
        Ok::<_, Error>(1_234)
    })??;
    println!("billing-a: billed {total} accounts; lock released");

    // With the lock free again, billing-b gets it.
    let token = b.with_lock("bill-run:2026-11", LeaseMode::watchdog(), |guard| {
        guard.fencing_token()
    })?;
    println!("billing-b ran a check under fencing token {token}");
    Ok(())
}
