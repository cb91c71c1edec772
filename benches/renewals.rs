//! 100,000 auto-extended leases held at once by one blocking elector (lock guards in
//! `LeaseMode::Watchdog`, lease 30 s, so a renewal every 10 s), on Redis and on
//! PostgreSQL, against servers of the bench's own, and on SQLite (a file of the bench's
//! own):
//!
//! - round trips per renewal tick: the driver's `extend_batch` calls over several renewal
//!   intervals (counted by a wrapper), divided by the intervals. On a standalone Redis a
//!   call of up to 10,000 leases is one pipelined round trip of 10 scripts (one per chunk
//!   of 1,000 leases: the server's scripts are printed beside it), so 100,000 leases are
//!   10; on PostgreSQL a call is one statement per 1,000 leases, all of them pipelined on
//!   one session; on SQLite, where nothing travels, the transactions instead (one per 500
//!   leases of a call, at most `leases / 500 + calls`);
//! - on SQLite, beside it: one `extend_batch` of the 100,000 leases timed against the
//!   same renewals made as 100,000 `extend` calls (one transaction each), in the same run;
//! - the process's threads before and while the leases are held;
//! - memory per held lease: the growth of the resident set while holding them, divided by
//!   their number (it includes the guards and the driver's bookkeeping);
//! - whether every lease was kept.
//!
//! Each backend runs in a process of its own (the bench binary started again), so that
//! its threads and memory are counted from a clean start.
//!
//! ```text
//! cargo bench -p leader-benches --bench renewals
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_benches::goal;
use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, LeaderElectionOptions, Lease, LeaseMode, LockBackend, LockName,
    OwnerToken, ReleaseRequest, Renewal,
};
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_redis::RedisBackend;
use leader_rig::fixtures::{self, PostgresServer, RedisServer};
use leader_rig::{Call, CountingBackend};
use leader_sqlite::SqliteBackend;

const LEASES: usize = 100_000;
const LEASE: Duration = Duration::from_secs(30);
const INTERVALS: u32 = 3;

/// What a backend's renewals are counted in: round trips to a server, or (SQLite, where
/// nothing travels) transactions on the file.
#[derive(Debug, Clone, Copy)]
enum Trips {
    RoundTrips,
    Transactions,
}

impl Trips {
    fn unit(self) -> &'static str {
        match self {
            Trips::RoundTrips => "round trips",
            Trips::Transactions => "transactions",
        }
    }
}

/// The `extend_batch` calls the driver made, and the leases they renewed.
#[derive(Debug, Clone, Copy)]
struct Renewed {
    calls: u64,
    leases: u64,
}

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
    trips: Trips,
    round_trips: impl Fn(Renewed, Option<u64>) -> f64,
    mut server_calls: impl FnMut() -> Option<u64>,
) {
    let backend = Arc::new(CountingBackend::new(backend));
    let counter = backend.counter();
    let calls = || Renewed {
        calls: counter.calls(Call::ExtendBatch),
        leases: counter.locks(Call::ExtendBatch),
    };
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
    let after = calls();
    let renewed = Renewed {
        calls: after.calls - calls_before.calls,
        leases: after.leases - calls_before.leases,
    };
    let calls = renewed.calls;
    let kept = guards.iter().filter(|guard| !guard.is_lost()).count();
    let round_trips = round_trips(renewed, server);
    let per_tick = round_trips / f64::from(INTERVALS);
    let per_lease = resident_held.saturating_sub(resident_before) as f64 / LEASES as f64;

    println!(
        "renewals/{label}: {LEASES} leases acquired in {acquiring:.2?}; {kept} of them kept over {INTERVALS} renewal intervals of {interval:?}"
    );
    let server = server.map_or(String::new(), |n| format!(", {n} scripts on the server"));
    let unit = trips.unit();
    println!(
        "renewals/{label}: {calls} extend_batch calls, {round_trips:.0} {unit}{server} over {INTERVALS} intervals => {per_tick:.1} {unit} per renewal tick"
    );
    println!(
        "renewals/{label}: threads {threads_before} before, {threads_held} while holding {LEASES} leases"
    );
    println!("renewals/{label}: about {per_lease:.0} bytes of resident memory per held lease");
    if let Trips::RoundTrips = trips {
        goal(
            &format!("{label} renewal round trips per tick, 100,000 leases"),
            per_tick,
            20.0,
            "",
        );
    }
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

/// Set in the environment of the child that measures one backend.
const CHILD: &str = "LEADER_BENCH_RENEWALS_BACKEND";

/// Each backend is measured in a process of its own (this bench binary started again), so
/// that its threads and resident memory are counted from a clean start, not among what an
/// earlier backend left behind.
fn main() {
    if leader_benches::name_filter_given() {
        return;
    }
    match std::env::var(CHILD).as_deref() {
        Ok("sqlite") => sqlite(),
        Ok("redis") => redis(),
        Ok("postgres") => postgres(),
        Ok(other) => panic!("{CHILD}={other}: not a backend of this bench"),
        Err(_) => {
            let me = std::env::current_exe().unwrap();
            for backend in ["sqlite", "redis", "postgres"] {
                let status = std::process::Command::new(&me)
                    .arg("--bench")
                    .env(CHILD, backend)
                    .status()
                    .unwrap();
                assert!(status.success(), "the {backend} run failed: {status}");
            }
        }
    }
}

fn sqlite() {
    let dir = std::env::temp_dir().join(format!("leader-bench-renewals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let backend = SqliteBackend::open(dir.join("locks.db")).unwrap();
    // A call's transactions: one per 500 leases, so at most leases / 500 + calls.
    hold(
        "sqlite",
        backend.clone(),
        Trips::Transactions,
        |renewed, _| renewed.leases as f64 / 500.0 + renewed.calls as f64,
        || None,
    );
    sqlite_batch_against_single(&backend);
    drop(backend);
    let _ = std::fs::remove_dir_all(&dir);
}

fn redis() {
    let Some(server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    // A call pipelines its scripts (one per 1,000 leases) ten to a round trip: its round
    // trips are ceil(scripts / 10), so a run's are at most scripts / 10 + calls.
    hold(
        "redis",
        RedisBackend::connect(&server.url()).unwrap(),
        Trips::RoundTrips,
        |renewed, scripts| {
            let calls = renewed.calls as f64;
            scripts.map_or(calls, |s| s as f64 / 10.0 + calls)
        },
        || Some(scripts_run(&mut conn)),
    );
}

fn postgres() {
    let Some(server) = fixtures::require("postgres", PostgresServer::start()) else {
        return;
    };
    let config = PostgresConfig::default().with_table("renewal_locks");
    // Every statement of a call is pipelined on one session: one round trip.
    hold(
        "postgres",
        PostgresBackend::connect_with(&server.url(), config).unwrap(),
        Trips::RoundTrips,
        |renewed, _| renewed.calls as f64,
        || None,
    );
}

/// Times one `extend_batch` of [`LEASES`] leases on SQLite against the same renewals made
/// one `extend` at a time (a transaction each), interleaved over three rounds; prints the
/// medians and their ratio.
fn sqlite_batch_against_single(backend: &SqliteBackend) {
    let owner = OwnerToken::random();
    let names: Vec<LockName> = (0..LEASES)
        .map(|n| LockName::new(format!("sqlite-batch:{n}")).unwrap())
        .collect();
    let requests: Vec<_> = names
        .iter()
        .map(|name| AcquireRequest::new(name, owner, "bench-node", LEASE))
        .collect();
    let leases: Vec<Lease> = backend
        .try_acquire_batch(&requests)
        .into_iter()
        .map(|answer| match answer.unwrap() {
            AcquireOutcome::Acquired(lease) => lease,
            held => panic!("a free lock was not taken: {held:?}"),
        })
        .collect();
    let renewals: Vec<Renewal<'_>> = leases.iter().map(|l| Renewal::new(l, LEASE)).collect();
    let (mut batched, mut single) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let started = Instant::now();
        let answers = backend.extend_batch(&renewals);
        batched.push(started.elapsed());
        assert!(answers.iter().all(Result::is_ok));
        let started = Instant::now();
        for renewal in &renewals {
            backend.extend(Renewal::new(renewal.lease, LEASE)).unwrap();
        }
        single.push(started.elapsed());
    }
    batched.sort();
    single.sort();
    let (batched, single) = (batched[1], single[1]);
    println!(
        "renewals/sqlite: one extend_batch of {LEASES} leases {batched:.2?} \
         ({:.1} us a lease); {LEASES} single extend calls {single:.2?}; batch ÷ single {:.3}x",
        batched.as_secs_f64() * 1e6 / LEASES as f64,
        batched.as_secs_f64() / single.as_secs_f64()
    );
    let releases: Vec<_> = leases
        .iter()
        .map(|l| ReleaseRequest::new(l, Duration::ZERO))
        .collect();
    backend.release_batch(&releases);
}
