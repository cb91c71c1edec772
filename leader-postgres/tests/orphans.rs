//! Orphaned acquisitions against a paused server: an acquire that timed out while
//! PostgreSQL was stopped (SIGSTOP) runs when the server goes on (SIGCONT), and its lease
//! starts then. The electors release it in the background until the server answers, so the
//! lock is free again soon after the thaw, not a whole lease later; and a backend whose
//! releases hang (a frozen Redis) delays no other backend's.
//!
//! Each thaw test prints the free-again times it measured (`--nocapture` shows them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{config, private_server};
use leader_async::AsyncLeaderElector;
use leader_blocking::LeaderElector;
use leader_core::LeaderElectionOptions;
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_redis::{RedisBackend, RedisConfig};
use leader_testkit::fixtures::{self, PostgresServer, RedisServer};
use leader_testkit::wait_until;

/// The lease of the thaw trials: an applied orphan would hold the lock this long after the
/// thaw.
const LEASE: Duration = Duration::from_secs(5);
/// The server stays paused this long past the end of the lease asked for: past the window
/// the background release used to stop at.
const PAST_THE_LEASE: Duration = Duration::from_millis(1500);
/// The lock is free again this soon after the thaw: a release attempt stuck when the
/// server went on (at most the operation timeout), the backoff (at most 500 ms), and a
/// loaded machine's share.
const FREE_AGAIN: Duration = Duration::from_secs(3);
const TRIALS: usize = 3;

/// Connect and any call in one second.
fn fast() -> PostgresConfig {
    config("orphan_locks")
        .with_connect_timeout(Duration::from_secs(1))
        .with_operation_timeout(Duration::from_secs(1))
}

fn options(node: &str, lease: Duration) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(lease)
}

fn backend(server: &PostgresServer, config: PostgresConfig) -> PostgresBackend {
    PostgresBackend::connect_with(&server.url(), config).unwrap()
}

fn sleep_until(at: Instant) {
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
}

/// The trials' median and maximum, printed.
fn report(what: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let (median, max) = (times[times.len() / 2], times[times.len() - 1]);
    eprintln!("{what}: free again after the thaw: median {median:?}, max {max:?} ({times:?})");
    max
}

/// How long after `resumed` node `b` first takes `key`, a lock taken for `lease`.
fn taken_by_b(
    b: &LeaderElector<PostgresBackend>,
    key: &str,
    lease: Duration,
    resumed: Instant,
) -> Duration {
    wait_until(
        "the lock free again",
        lease + Duration::from_secs(5),
        || matches!(b.run_if_leader(key, || ()), Ok(Some(()))),
    );
    resumed.elapsed()
}

#[test]
fn an_orphan_applied_at_the_thaw_is_released_soon_after_blocking() {
    let Some(server) = private_server() else {
        return;
    };
    let a = LeaderElector::new(backend(&server, fast()), options("a", LEASE)).unwrap();
    let b = LeaderElector::new(backend(&server, fast()), options("b", LEASE)).unwrap();
    let mut times = Vec::new();
    for trial in 0..TRIALS {
        let key = format!("thaw-blocking-{trial}");
        // Both nodes connected: the pause stops a live session.
        assert!(b.state(&key).unwrap().leader().is_none());
        assert!(a.state(&key).unwrap().leader().is_none());
        server.pause();
        let sent = Instant::now();
        let result = a.run_if_leader(&key, || unreachable!("never elected"));
        assert!(
            matches!(&result, Err(err) if err.is_transient()),
            "{result:?}"
        );
        sleep_until(sent + LEASE + PAST_THE_LEASE);
        server.resume();
        times.push(taken_by_b(&b, &key, LEASE, Instant::now()));
    }
    let max = report("postgres, blocking", times);
    assert!(
        max <= FREE_AGAIN,
        "the lock stayed taken {max:?} after a thaw"
    );
}

#[test]
fn an_orphan_applied_at_the_thaw_is_released_soon_after_async() {
    let Some(server) = private_server() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let a = AsyncLeaderElector::new(backend(&server, fast()), options("a", LEASE)).unwrap();
    let b = LeaderElector::new(backend(&server, fast()), options("b", LEASE)).unwrap();
    let mut times = Vec::new();
    for trial in 0..TRIALS {
        let key = format!("thaw-async-{trial}");
        assert!(b.state(&key).unwrap().leader().is_none());
        runtime.block_on(async {
            assert!(a.state(&key).await.unwrap().leader().is_none());
            server.pause();
            let sent = Instant::now();
            let result = a
                .run_if_leader(&key, || async { unreachable!("never elected") })
                .await;
            assert!(
                matches!(&result, Err(err) if err.is_transient()),
                "{result:?}"
            );
            tokio::time::sleep_until((sent + LEASE + PAST_THE_LEASE).into()).await;
            server.resume();
        });
        times.push(taken_by_b(&b, &key, LEASE, Instant::now()));
    }
    let max = report("postgres, async", times);
    assert!(
        max <= FREE_AGAIN,
        "the lock stayed taken {max:?} after a thaw"
    );
}

/// Three calls time out against a frozen Redis: their orphans' releases hang, each up to
/// the response timeout, again and again. Then one call times out against a paused
/// PostgreSQL, which goes on at once: its orphan is released within a moment, whatever
/// the Redis releases are doing.
fn with_redis_frozen_and_three_orphans(call: impl FnOnce(&RedisServer)) {
    let Some(redis) = fixtures::require("redis", RedisServer::start()) else {
        return;
    };
    call(&redis);
}

/// The frozen Redis's locks: their orphans are released for as long as such a lease.
const REDIS_LEASE: Duration = Duration::from_secs(30);

/// The lease of PostgreSQL's lock beside the frozen Redis.
const POSTGRES_LEASE: Duration = Duration::from_secs(20);

/// How soon PostgreSQL's lock is free again must not depend on another backend's releases.
const NOT_HELD_UP: Duration = Duration::from_millis(1500);

fn redis_config() -> RedisConfig {
    RedisConfig::default()
        .with_connect_timeout(Duration::from_secs(2))
        .with_response_timeout(Duration::from_secs(2))
}

#[test]
fn an_orphan_release_is_not_held_up_by_another_backends_hanging_releases_blocking() {
    let Some(postgres) = private_server() else {
        return;
    };
    with_redis_frozen_and_three_orphans(|redis| {
        let stuck_backend = RedisBackend::connect_with(&redis.url(), redis_config()).unwrap();
        let stuck = LeaderElector::new(stuck_backend, options("a", REDIS_LEASE)).unwrap();
        assert!(stuck.state("warm").unwrap().leader().is_none());
        redis.pause();
        for n in 0..3 {
            let result = stuck.run_if_leader(&format!("frozen-{n}"), || ());
            assert!(
                matches!(&result, Err(err) if err.is_transient()),
                "{result:?}"
            );
        }
        let slow = fast().with_operation_timeout(Duration::from_secs(2));
        let a = LeaderElector::new(
            backend(&postgres, slow.clone()),
            options("a", POSTGRES_LEASE),
        )
        .unwrap();
        let b = LeaderElector::new(backend(&postgres, slow), options("b", POSTGRES_LEASE)).unwrap();
        assert!(a.state("job").unwrap().leader().is_none());
        assert!(b.state("job").unwrap().leader().is_none());
        postgres.pause();
        let result = a.run_if_leader("job", || unreachable!("never elected"));
        assert!(
            matches!(&result, Err(err) if err.is_transient()),
            "{result:?}"
        );
        postgres.resume();
        let took = taken_by_b(&b, "job", POSTGRES_LEASE, Instant::now());
        eprintln!("postgres beside a frozen redis, blocking: free again {took:?} after the thaw");
        redis.resume();
        assert!(
            took <= NOT_HELD_UP,
            "the lock stayed taken {took:?} after the thaw"
        );
    });
}

#[test]
fn an_orphan_release_is_not_held_up_by_another_backends_hanging_releases_async() {
    let Some(postgres) = private_server() else {
        return;
    };
    with_redis_frozen_and_three_orphans(|redis| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let stuck_backend = RedisBackend::connect_with(&redis.url(), redis_config()).unwrap();
        let stuck = AsyncLeaderElector::new(stuck_backend, options("a", REDIS_LEASE)).unwrap();
        let slow = fast().with_operation_timeout(Duration::from_secs(2));
        let a = AsyncLeaderElector::new(
            backend(&postgres, slow.clone()),
            options("a", POSTGRES_LEASE),
        )
        .unwrap();
        let b = LeaderElector::new(backend(&postgres, slow), options("b", POSTGRES_LEASE)).unwrap();
        assert!(b.state("job").unwrap().leader().is_none());
        runtime.block_on(async {
            assert!(stuck.state("warm").await.unwrap().leader().is_none());
            assert!(a.state("job").await.unwrap().leader().is_none());
            redis.pause();
            for n in 0..3 {
                let result = stuck
                    .run_if_leader(&format!("frozen-{n}"), || async {})
                    .await;
                assert!(
                    matches!(&result, Err(err) if err.is_transient()),
                    "{result:?}"
                );
            }
            postgres.pause();
            let result = a
                .run_if_leader("job", || async { unreachable!("never elected") })
                .await;
            assert!(
                matches!(&result, Err(err) if err.is_transient()),
                "{result:?}"
            );
            postgres.resume();
        });
        let took = taken_by_b(&b, "job", POSTGRES_LEASE, Instant::now());
        eprintln!("postgres beside a frozen redis, async: free again {took:?} after the thaw");
        redis.resume();
        assert!(
            took <= NOT_HELD_UP,
            "the lock stayed taken {took:?} after the thaw"
        );
    });
}
