//! 10,000 auto-extended leases held at once on Redis by one blocking elector (lock guards
//! in `LeaseMode::Watchdog`, lease 6 s, so a renewal every 2 s), against a redis-server of
//! the bench's own:
//!
//! - round trips per renewal tick: the driver's `extend_batch` calls over several renewal
//!   intervals (counted by a wrapper; on a standalone server a call of up to 10,000 leases
//!   is one pipelined round trip), divided by the intervals, beside the scripts the server
//!   ran (`INFO commandstats`, one per chunk of 1,000 leases);
//! - the process's threads before and while the leases are held;
//! - memory per held lease: the growth of the resident set while holding them, divided by
//!   their number (it includes the guards and the driver's bookkeeping);
//! - whether every lease was kept.
//!
//! ```text
//! cargo bench -p leader-benches --bench renewals
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_benches::goal;
use leader_blocking::LeaderElector;
use leader_core::{LeaderElectionOptions, LeaseMode};
use leader_redis::RedisBackend;
use leader_testkit::fixtures::{self, RedisServer};
use leader_testkit::{Call, CountingBackend};

const LEASES: usize = 10_000;
const LEASE: Duration = Duration::from_secs(6);
const INTERVALS: u32 = 4;

/// How many scripts the server has run.
fn scripts_run(conn: &mut redis::Connection) -> u64 {
    leader_benches::redis_command_stats(conn)
        .into_iter()
        .filter(|(name, _)| name == "evalsha" || name == "eval")
        .map(|(_, calls)| calls)
        .sum()
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, Iterator::count)
}

/// The resident set, in bytes.
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn main() {
    let Some(server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let backend = Arc::new(CountingBackend::new(
        RedisBackend::connect(&server.url()).unwrap(),
    ));
    let counter = backend.counter();
    // On a standalone server an extend_batch call of up to 10,000 leases is one pipelined
    // round trip, and no call here can carry more than the LEASES = 10,000 there are.
    let round_trips = || counter.calls(Call::ExtendBatch);
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = LeaderElector::with_shared_backend(Arc::clone(&backend), options).unwrap();
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let mode = LeaseMode::Watchdog { timeout: LEASE };

    let threads_before = threads();
    let resident_before = resident();
    let started = Instant::now();
    let guards: Vec<_> = (0..LEASES)
        .map(|n| elector.acquire(&format!("renewals:{n}"), mode).unwrap())
        .collect();
    let acquiring = started.elapsed();
    let resident_held = resident();
    let threads_held = threads();

    // Count over whole renewal intervals, once the first renewals have begun.
    let interval = LEASE / 3;
    std::thread::sleep(interval);
    let before = scripts_run(&mut conn);
    let batches_before = round_trips();
    std::thread::sleep(interval * INTERVALS);
    let scripts = scripts_run(&mut conn) - before;
    let round_trips = round_trips() - batches_before;
    let kept = guards.iter().filter(|guard| !guard.is_lost()).count();
    let per_tick = round_trips as f64 / f64::from(INTERVALS);
    let per_lease = resident_held.saturating_sub(resident_before) as f64 / LEASES as f64;

    println!(
        "renewals: {LEASES} leases acquired in {acquiring:.2?}; {kept} of them kept over {INTERVALS} renewal intervals of {interval:?}"
    );
    println!(
        "renewals: {round_trips} round trips ({scripts} scripts) over {INTERVALS} intervals => {per_tick:.1} round trips per renewal tick"
    );
    println!(
        "renewals: threads {threads_before} before, {threads_held} while holding {LEASES} leases"
    );
    println!("renewals: about {per_lease:.0} bytes of resident memory per held lease");
    goal(
        "redis renewal round trips per tick, 10,000 leases",
        per_tick,
        10.0,
        "",
    );
    goal(
        "threads added to hold 10,000 auto-extended leases",
        threads_held.saturating_sub(threads_before) as f64,
        2.0,
        "",
    );
    goal("leases lost over the run", (LEASES - kept) as f64, 0.0, "");
    drop(guards);
}
