//! Read/write locks (`ReadWriteLocks`) against the same backend's exclusive lock, in the
//! same run, on the in-memory backend, Redis and PostgreSQL (issue 54's goals):
//!
//! - **read cycle ÷ exclusive cycle**: an uncontended `read` + release against
//!   `LeaderElector::acquire` + release of a lock, interleaved (goal ≤ 1.1x);
//! - **8 readers ÷ 1 reader**: read cycles per second of eight threads on one lock against
//!   one thread's (goal ≥ 6x). Its limit, measured beside it: eight threads each cycling an
//!   exclusive lock of its own, against one, which is what the machine and the store give
//!   eight clients whatever the lock;
//! - **a writer under reader load**: four threads keep taking read holds of a few
//!   milliseconds back to back; a writer asks every 20 ms. The p99 of its wait, against the
//!   readers' lease (goal ≤ one reader lease): writer preference holds new readers out, so
//!   it waits for the holds in progress, not for a gap in the stream.
//!
//! ```text
//! cargo bench -p leader-benches --bench read_write
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use leader_benches::{
    Case, goal_at_least_with_limit, goal_with_limit, interleaved, percentile, ratio,
};
use leader_blocking::{LeaderElector, ReadWriteLocks};
use leader_core::{
    InMemoryBackend, LeaderElectionOptions, LeaseMode, LockBackend, SharedLockBackend,
};
use leader_postgres::PostgresBackend;
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures::{self, PostgresServer, RedisServer};

/// How long each throughput case runs.
const THROUGHPUT_FOR: Duration = Duration::from_secs(3);
/// The readers' lease under load: the writer's p99 wait is compared with it.
const READER_LEASE: Duration = Duration::from_secs(2);

fn options(wait: Duration, lease: Duration) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_wait_time(wait)
        .with_lease_time(lease)
}

/// Read cycles against exclusive cycles, interleaved.
fn cycles<B: SharedLockBackend + 'static>(
    label: &str,
    backend: &Arc<B>,
    rounds: usize,
) -> (f64, f64) {
    let elector = LeaderElector::with_shared_backend(
        Arc::clone(backend),
        options(Duration::ZERO, leader_benches::LEASE),
    )
    .unwrap();
    let locks = ReadWriteLocks::new(&elector);
    let mut cases: Vec<Case<'_>> = vec![
        (
            "floor: exclusive acquire + release",
            Box::new(|| {
                let guard = elector
                    .acquire("rw-bench-exclusive", LeaseMode::watchdog())
                    .unwrap();
                guard.release().unwrap();
            }),
        ),
        (
            "read + release",
            Box::new(|| {
                let guard = locks.read("rw-bench-read", LeaseMode::watchdog()).unwrap();
                guard.release().unwrap();
            }),
        ),
        (
            "write + release",
            Box::new(|| {
                let guard = locks
                    .write("rw-bench-write", LeaseMode::watchdog())
                    .unwrap();
                guard.release().unwrap();
            }),
        ),
    ];
    let medians = interleaved(&format!("read_write/{label}"), rounds, &mut cases);
    (ratio(medians[1], medians[0]), ratio(medians[2], medians[0]))
}

/// Cycles per second of `threads` threads, each running `cycle` until the time is up.
fn per_second(threads: usize, cycle: impl Fn(usize) + Sync) -> f64 {
    let done = AtomicBool::new(false);
    let count = AtomicU64::new(0);
    let started = Instant::now();
    thread::scope(|scope| {
        for thread in 0..threads {
            let (done, count, cycle) = (&done, &count, &cycle);
            scope.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    cycle(thread);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        thread::sleep(THROUGHPUT_FOR);
        done.store(true, Ordering::Relaxed);
    });
    count.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Eight readers' throughput on one lock ÷ one reader's, and the same for exclusive locks
/// of their own (the limit).
fn readers<B: SharedLockBackend + 'static>(label: &str, backend: &Arc<B>) -> (f64, f64) {
    let elector = LeaderElector::with_shared_backend(
        Arc::clone(backend),
        options(Duration::ZERO, leader_benches::LEASE),
    )
    .unwrap();
    let locks = ReadWriteLocks::new(&elector);
    let read = |_: usize| {
        let guard = locks
            .read("rw-bench-readers", LeaseMode::watchdog())
            .unwrap();
        guard.release().unwrap();
    };
    let exclusive = |thread: usize| {
        let guard = elector
            .acquire(&format!("rw-bench-own-{thread}"), LeaseMode::watchdog())
            .unwrap();
        guard.release().unwrap();
    };
    let one = per_second(1, read);
    let eight = per_second(8, read);
    let one_exclusive = per_second(1, exclusive);
    let eight_exclusive = per_second(8, exclusive);
    println!(
        "read_write/{label}  readers: 1 {one:.0}/s, 8 {eight:.0}/s; exclusive locks of their own: 1 {one_exclusive:.0}/s, 8 {eight_exclusive:.0}/s"
    );
    (eight / one, eight_exclusive / one_exclusive)
}

/// The sorted waits of a writer asking every 20 ms while four readers keep the lock.
fn writer_waits<B: SharedLockBackend + 'static>(backend: &Arc<B>, writes: usize) -> Vec<Duration> {
    let readers = ReadWriteLocks::new(
        &LeaderElector::with_shared_backend(
            Arc::clone(backend),
            options(Duration::from_secs(30), READER_LEASE),
        )
        .unwrap(),
    );
    let writer = ReadWriteLocks::new(
        &LeaderElector::with_shared_backend(
            Arc::clone(backend),
            options(Duration::from_secs(30), READER_LEASE),
        )
        .unwrap(),
    );
    let done = AtomicBool::new(false);
    let mut waits = Vec::with_capacity(writes);
    thread::scope(|scope| {
        for _ in 0..4 {
            let (done, readers) = (&done, &readers);
            scope.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let guard = readers
                        .read("rw-bench-load", LeaseMode::watchdog())
                        .unwrap();
                    thread::sleep(Duration::from_millis(3));
                    guard.release().unwrap();
                }
            });
        }
        thread::sleep(Duration::from_millis(100));
        for _ in 0..writes {
            let asked = Instant::now();
            let guard = writer
                .write("rw-bench-load", LeaseMode::watchdog())
                .unwrap();
            waits.push(asked.elapsed());
            thread::sleep(Duration::from_millis(1));
            guard.release().unwrap();
            thread::sleep(Duration::from_millis(20));
        }
        done.store(true, Ordering::Relaxed);
    });
    waits.sort();
    waits
}

fn bench<B: SharedLockBackend + LockBackend + 'static>(label: &str, backend: B, rounds: usize) {
    let backend = Arc::new(backend);
    let (read, write) = cycles(label, &backend, rounds);
    goal_with_limit(
        &format!("{label} read + release ÷ exclusive acquire + release"),
        read,
        1.1,
        "x",
        &format!(
            "the store's read/write call itself: a write + release, which takes no reader's path, costs {write:.2}x"
        ),
    );
    let (readers, machine) = readers(label, &backend);
    goal_at_least_with_limit(
        &format!("{label} 8 readers ÷ 1 reader, cycles per second"),
        readers,
        6.0,
        "x",
        &format!(
            "eight clients each on an exclusive lock of its own reach {machine:.2}x one on this machine"
        ),
    );
    let waits = writer_waits(&backend, 200);
    let p50 = percentile(&waits, 50);
    let p99 = percentile(&waits, 99);
    println!(
        "read_write/{label}  writer wait under 4 readers: p50 {p50:?}, p99 {p99:?}, max {:?}",
        waits.last().copied().unwrap_or_default()
    );
    goal_with_limit(
        &format!("{label} writer's p99 wait under reader load ÷ a reader's lease"),
        ratio(p99, READER_LEASE),
        1.0,
        "x",
        "the holds in progress when it asks",
    );
}

fn main() {
    bench("memory", InMemoryBackend::new(), 5_000);
    if let Some(server) = fixtures::require("redis-server", RedisServer::start()) {
        let config = RedisConfig::default().with_key_prefix("leader-bench-rw");
        bench(
            "redis",
            RedisBackend::connect_with(&server.url(), config).unwrap(),
            2_000,
        );
    }
    if let Some(server) = fixtures::require("postgres", PostgresServer::start()) {
        bench(
            "postgres",
            PostgresBackend::connect(&server.url()).unwrap(),
            2_000,
        );
    }
}
