//! No orphaned lock, and renewals that race the lease deadline, against a real
//! redis-server paused with SIGSTOP: an acquire that
//! timed out leaves no orphaned lock behind, and a lease whose renewal hangs is lost at
//! its deadline, not after the response timeout.

use crate::common;

use std::time::{Duration, Instant};

use leader_async::AsyncLeaderElector;
use leader_blocking::LeaderElector;
use leader_core::{Error, LeaderElectionOptions, LeaseContext};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures::RedisServer;
use leader_testkit::within;

/// The lease of the holders these tests pause the server under.
const LEASE: Duration = Duration::from_millis(900);
/// How late after its deadline a lost lease may be reported.
const LOSS_BOUND: Duration = Duration::from_millis(150);

fn backend(server: &RedisServer, response_timeout: Duration) -> RedisBackend {
    let config = RedisConfig::default()
        .with_connect_timeout(Duration::from_secs(1))
        .with_response_timeout(response_timeout);
    RedisBackend::connect_with(&server.url(), config).unwrap()
}

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(30))
}

/// A second node (its own backend) gets the lock within a second, not after the 30 s
/// lease an orphaned acquisition would hold it for.
fn another_node_takes_over(server: &RedisServer) {
    let b = LeaderElector::new(
        backend(server, Duration::from_secs(1)),
        options("b").with_wait_time(Duration::from_secs(5)),
    )
    .unwrap();
    let started = Instant::now();
    assert_eq!(b.run_if_leader("job", || ()).unwrap(), Some(()));
    eprintln!("another node took the lock after {:?}", started.elapsed());
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the lock stayed taken for {:?}",
        started.elapsed()
    );
}

#[test]
fn a_blocking_acquire_that_timed_out_on_a_paused_server_leaves_no_orphan() {
    let Some(server) = common::private_server() else {
        return;
    };
    let a = LeaderElector::new(backend(&server, Duration::from_millis(300)), options("a")).unwrap();
    // Load the scripts first, so the queued request is an acquire the server runs on
    // resume (not an EVALSHA it does not know yet).
    assert_eq!(a.run_if_leader("warm-up", || ()).unwrap(), Some(()));
    server.pause();
    let outcome = a.run_if_leader("job", || unreachable!("not elected"));
    server.resume();
    let err = outcome.expect_err("a paused server is an error");
    assert!(err.is_transient(), "{err}");
    another_node_takes_over(&server);
}

#[test]
fn an_async_acquire_that_timed_out_on_a_paused_server_leaves_no_orphan() {
    let Some(server) = common::private_server() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let a = AsyncLeaderElector::new(backend(&server, Duration::from_millis(300)), options("a"))
        .unwrap();
    runtime.block_on(async {
        // Connect and load the scripts first, so the queued request is an acquire the
        // server runs on resume.
        let warm_up = a.run_if_leader("warm-up", || async {}).await.unwrap();
        assert_eq!(warm_up, Some(()));
        server.pause();
        let outcome = a.run_if_leader("job", || async { unreachable!() }).await;
        // The request stays queued on the open connection and runs on resume.
        server.resume();
        assert!(matches!(outcome, Err(Error::Backend(_))), "{outcome:?}");
    });
    another_node_takes_over(&server);
}

/// Checks `lease` was reported lost no later than [`LOSS_BOUND`] after its deadline.
#[track_caller]
fn lost_in_time(acquired: Instant, lost_at: Instant) {
    let took = lost_at - acquired;
    eprintln!("a {LEASE:?} lease was reported lost {took:?} after acquiring it");
    assert!(
        took <= LEASE + LOSS_BOUND,
        "lost {took:?} after acquiring a {LEASE:?} lease"
    );
}

#[test]
fn a_blocking_lease_is_lost_at_its_deadline_while_the_server_is_paused() {
    let Some(server) = common::private_server() else {
        return;
    };
    let a = LeaderElector::new(
        backend(&server, Duration::from_secs(5)),
        options("a").with_lease_time(LEASE).with_auto_extend(true),
    )
    .unwrap();
    let started = Instant::now();
    let outcome = a.run_if_leader_with("job", |lease: &LeaseContext| {
        server.pause();
        let lost = futures::executor::block_on(within(Duration::from_secs(10), lease.lost()));
        let lost_at = Instant::now();
        server.resume();
        assert!(lost.is_some(), "lost() resolved");
        lost_in_time(started, lost_at);
        Ok::<_, ()>(())
    });
    assert!(outcome.unwrap().lease_lost());
}

#[test]
fn an_async_lease_is_lost_at_its_deadline_while_the_server_is_paused() {
    let Some(server) = common::private_server() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let a = AsyncLeaderElector::new(
        backend(&server, Duration::from_secs(5)),
        options("a").with_lease_time(LEASE).with_auto_extend(true),
    )
    .unwrap();
    runtime.block_on(async {
        let started = Instant::now();
        let outcome = a
            .run_if_leader_with("job", |lease| {
                let server = &server;
                async move {
                    server.pause();
                    let lost = tokio::time::timeout(Duration::from_secs(10), lease.lost()).await;
                    let lost_at = Instant::now();
                    server.resume();
                    assert!(lost.is_ok(), "lost() resolved");
                    lost_in_time(started, lost_at);
                    Ok::<_, ()>(())
                }
            })
            .await
            .unwrap();
        assert!(outcome.lease_lost());
    });
}
