//! 100,000 auto-extended leases held at once by one blocking elector (lock guards in
//! `LeaseMode::Watchdog`, lease 30 s, so a renewal every 10 s), on Redis and on
//! PostgreSQL, against servers of the bench's own:
//!
//! - round trips per renewal tick: the driver's `extend_batch` calls over several renewal
//!   intervals (counted by a wrapper), divided by the intervals. On a standalone Redis a
//!   call of up to 10,000 leases is one pipelined round trip of 10 scripts (one per chunk
//!   of 1,000 leases: the server's scripts are printed beside it), so 100,000 leases are
//!   10; on PostgreSQL a call is one statement per 1,000 leases, all of them pipelined on
//!   one session;
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
use leader_core::{LeaderElectionOptions, LeaseMode, LockBackend};
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_redis::RedisBackend;
use leader_testkit::fixtures::{self, PostgresServer, RedisServer};
use leader_testkit::{Call, CountingBackend};

const LEASES: usize = 100_000;
const LEASE: Duration = Duration::from_secs(30);
const INTERVALS: u32 = 3;

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

/// Holds [`LEASES`] auto-extended leases on `backend` over [`INTERVALS`] renewal
/// intervals and prints what it cost; `server_calls` counts the server's own calls (the
/// scripts Redis ran), where there is a way to, and `round_trips` tells the round trips
/// (at most) of that many `extend_batch` calls and server calls.
fn hold<B: LockBackend + 'static>(
    label: &str,
    backend: B,
    round_trips: impl Fn(u64, Option<u64>) -> f64,
    mut server_calls: impl FnMut() -> Option<u64>,
) {
    let backend = Arc::new(CountingBackend::new(backend));
    let counter = backend.counter();
    let calls = || counter.calls(Call::ExtendBatch);
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = LeaderElector::with_shared_backend(Arc::clone(&backend), options).unwrap();
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
    let server_before = server_calls();
    let calls_before = calls();
    std::thread::sleep(interval * INTERVALS);
    let server = server_calls()
        .zip(server_before)
        .map(|(after, before)| after - before);
    let calls = calls() - calls_before;
    let kept = guards.iter().filter(|guard| !guard.is_lost()).count();
    let round_trips = round_trips(calls, server);
    let per_tick = round_trips / f64::from(INTERVALS);
    let per_lease = resident_held.saturating_sub(resident_before) as f64 / LEASES as f64;

    println!(
        "renewals/{label}: {LEASES} leases acquired in {acquiring:.2?}; {kept} of them kept over {INTERVALS} renewal intervals of {interval:?}"
    );
    let server = server.map_or(String::new(), |n| format!(", {n} scripts on the server"));
    println!(
        "renewals/{label}: {calls} extend_batch calls, {round_trips:.0} round trips{server} over {INTERVALS} intervals => {per_tick:.1} round trips per renewal tick"
    );
    println!(
        "renewals/{label}: threads {threads_before} before, {threads_held} while holding {LEASES} leases"
    );
    println!("renewals/{label}: about {per_lease:.0} bytes of resident memory per held lease");
    goal(
        &format!("{label} renewal round trips per tick, 100,000 leases"),
        per_tick,
        20.0,
        "",
    );
    goal(
        &format!("{label} threads added to hold 100,000 auto-extended leases"),
        threads_held.saturating_sub(threads_before) as f64,
        2.0,
        "",
    );
    goal(
        &format!("{label} leases lost over the run"),
        (LEASES - kept) as f64,
        0.0,
        "",
    );
    drop(guards);
}

fn main() {
    if let Some(server) = fixtures::require("redis-server", RedisServer::start()) {
        let mut conn = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        // A call pipelines its scripts (one per 1,000 leases) ten to a round trip: its
        // round trips are ceil(scripts / 10), so a run's are at most scripts / 10 + calls.
        hold(
            "redis",
            RedisBackend::connect(&server.url()).unwrap(),
            |calls, scripts| scripts.map_or(calls as f64, |s| s as f64 / 10.0 + calls as f64),
            || Some(scripts_run(&mut conn)),
        );
    }
    if let Some(server) = fixtures::require("postgres", PostgresServer::start()) {
        let config = PostgresConfig::default().with_table("renewal_locks");
        // Every statement of a call is pipelined on one session: one round trip.
        hold(
            "postgres",
            PostgresBackend::connect_with(&server.url(), config).unwrap(),
            |calls, _| calls as f64,
            || None,
        );
    }
}
