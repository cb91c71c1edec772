//! Orphaned acquisitions against a paused Redis: an acquire that timed out while the server
//! was stopped (SIGSTOP) sits in its socket and runs when the server goes on (SIGCONT), its
//! lease starting then. The electors release it in the background until the server
//! answers, so the lock is free again soon after the thaw, not a whole lease later.
//!
//! Each test prints the free-again times it measured (`--nocapture` shows them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::private_server;
use leader_async::AsyncLeaderElector;
use leader_blocking::LeaderElector;
use leader_core::LeaderElectionOptions;
use leader_redis::{RedisBackend, RedisConfig};
use leader_testkit::fixtures::RedisServer;
use leader_testkit::wait_until;

/// The lease of the trials: an applied orphan would hold the lock this long after the thaw.
const LEASE: Duration = Duration::from_secs(5);
/// The server stays paused this long past the end of the lease asked for: past the window
/// the background release used to stop at.
const PAST_THE_LEASE: Duration = Duration::from_millis(1500);
/// The lock is free again this soon after the thaw: a release attempt stuck when the
/// server went on (at most the timeouts), the backoff (at most 500 ms), and a loaded
/// machine's share.
const FREE_AGAIN: Duration = Duration::from_secs(3);
const TRIALS: usize = 3;

fn backend(server: &RedisServer) -> RedisBackend {
    let config = RedisConfig::default()
        .with_connect_timeout(Duration::from_millis(500))
        .with_response_timeout(Duration::from_millis(500));
    RedisBackend::connect_with(&server.url(), config).unwrap()
}

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(LEASE)
}

/// The trials' median and maximum, printed.
fn report(what: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let (median, max) = (times[times.len() / 2], times[times.len() - 1]);
    eprintln!("{what}: free again after the thaw: median {median:?}, max {max:?} ({times:?})");
    max
}

/// How long after `resumed` node `b` first takes `key`.
fn taken_by_b(b: &LeaderElector<RedisBackend>, key: &str, resumed: Instant) -> Duration {
    wait_until(
        "the lock free again",
        LEASE + Duration::from_secs(5),
        || matches!(b.run_if_leader(key, || ()), Ok(Some(()))),
    );
    resumed.elapsed()
}

#[test]
fn an_orphan_applied_at_the_thaw_is_released_soon_after_blocking() {
    let Some(server) = private_server() else {
        return;
    };
    let a = LeaderElector::new(backend(&server), options("a")).unwrap();
    let b = LeaderElector::new(backend(&server), options("b")).unwrap();
    let mut times = Vec::new();
    for trial in 0..TRIALS {
        let key = format!("thaw-blocking-{trial}");
        // Both nodes connected: the pause stops a live connection.
        assert!(b.state(&key).unwrap().leader().is_none());
        assert!(a.state(&key).unwrap().leader().is_none());
        server.pause();
        let sent = Instant::now();
        let result = a.run_if_leader(&key, || unreachable!("never elected"));
        assert!(
            matches!(&result, Err(err) if err.is_transient()),
            "{result:?}"
        );
        std::thread::sleep(
            (sent + LEASE + PAST_THE_LEASE).saturating_duration_since(Instant::now()),
        );
        server.resume();
        times.push(taken_by_b(&b, &key, Instant::now()));
    }
    let max = report("redis, blocking", times);
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
    let a = runtime
        .block_on(async { AsyncLeaderElector::new(backend(&server), options("a")).unwrap() });
    let b = LeaderElector::new(backend(&server), options("b")).unwrap();
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
        times.push(taken_by_b(&b, &key, Instant::now()));
    }
    let max = report("redis, async", times);
    assert!(
        max <= FREE_AGAIN,
        "the lock stayed taken {max:?} after a thaw"
    );
}
