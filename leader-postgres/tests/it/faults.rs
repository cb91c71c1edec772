//! Faults: a server killed or paused under a held lease gives typed, transient errors
//! naming the lock within the operation timeout, never a hang; the same backend recovers
//! when the server comes back, with its data or without.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{config, must_acquire, private_server};
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, LeaderElectionOptions,
    LockBackend, LockName, OwnerToken, ReleaseRequest, Renewal,
};
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_rig::fixtures::Data;
use leader_testkit::{checks, fresh_name};

const LEASE: Duration = Duration::from_secs(30);

/// Connect in one second, any call in three.
fn fast() -> PostgresConfig {
    config("fault_locks")
        .with_connect_timeout(Duration::from_secs(1))
        .with_operation_timeout(Duration::from_secs(3))
}

/// Runs `f`, checks it failed with a transient error on `key` within `bound`.
fn fails_fast<T: std::fmt::Debug>(
    what: &str,
    key: &LockName,
    bound: Duration,
    f: impl FnOnce() -> Result<T, Error>,
) {
    checks::fails_fast(what, key.as_str(), bound, "postgres", f);
}

/// Retries `f` until it succeeds (transient errors in between), at most `within`.
fn recovers<T>(within: Duration, mut f: impl FnMut() -> Result<T, Error>) -> T {
    let deadline = Instant::now() + within;
    loop {
        match f() {
            Ok(value) => return value,
            Err(err) => {
                assert!(err.is_transient(), "{err}");
                assert!(Instant::now() < deadline, "no recovery: {err}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

#[test]
fn a_killed_server_fails_closed_within_the_timeout_and_the_action_does_not_run() {
    let Some(mut server) = private_server() else {
        return;
    };
    let config = fast();
    let bound = config.operation_timeout() + Duration::from_secs(1);
    let backend = PostgresBackend::connect_with(&server.url(), config).unwrap();
    let key = fresh_name("killed");
    let lease = must_acquire(&backend, &key, "node-a", LEASE);

    server.kill();
    checks::a_stopped_server_fails_closed_within_the_timeout(
        &backend, &lease, bound, true, "postgres",
    );
    let other = fresh_name("killed-other");

    let ran = AtomicBool::new(false);
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = leader_blocking::LeaderElector::new(backend.clone(), options).unwrap();
    let started = Instant::now();
    let result = elector.run_if_leader(other.as_str(), || ran.store(true, Ordering::SeqCst));
    assert!(started.elapsed() < bound);
    assert!(matches!(result, Err(Error::Backend(_))), "{result:?}");
    assert!(!ran.load(Ordering::SeqCst), "the action must not run");

    // The same backend recovers once the server is back, with the lease it held.
    server.restart(Data::Keep).unwrap();
    let extended = recovers(Duration::from_secs(15), || {
        LockBackend::extend(&backend, Renewal::new(&lease, LEASE).with_db_time(true))
    });
    assert!(
        matches!(extended, ExtendOutcome::Extended { .. }),
        "{extended:?}"
    );
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        leader_core::ReleaseOutcome::Released
    );
}

#[test]
fn a_paused_server_gives_an_error_within_the_timeout_and_the_backend_recovers() {
    let Some(server) = private_server() else {
        return;
    };
    let config = fast();
    let bound = config.operation_timeout() + Duration::from_secs(1);
    let backend = PostgresBackend::connect_with(&server.url(), config).unwrap();
    let key = fresh_name("paused");
    let lease = must_acquire(&backend, &key, "node-a", LEASE);

    server.pause();
    fails_fast("extend", &key, bound, || {
        LockBackend::extend(&backend, Renewal::new(&lease, LEASE).with_db_time(true))
    });
    let async_key = key.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    fails_fast("async state", &key, bound, || {
        runtime.block_on(AsyncLockBackend::state(&backend, &async_key))
    });
    server.resume();

    // The connection stuck behind the paused server was closed: the next call is served.
    let state = recovers(Duration::from_secs(10), || {
        LockBackend::state(&backend, &key)
    });
    assert_eq!(state.leader().unwrap().fencing_token, lease.fencing_token);
}

#[test]
fn a_server_that_lost_its_data_still_never_hands_out_a_smaller_token() {
    let Some(mut server) = private_server() else {
        return;
    };
    let backend = PostgresBackend::connect_with(&server.url(), fast()).unwrap();
    let key = fresh_name("lost");
    let before = must_acquire(&backend, &key, "node-a", LEASE);

    server.restart(Data::Lose).unwrap();
    // A fresh cluster: the table is made again by the same backend, the row is gone, and
    // the token is seeded from the server's clock.
    let after = recovers(Duration::from_secs(15), || {
        let request = AcquireRequest::new(&key, OwnerToken::random(), "node-b", LEASE);
        LockBackend::try_acquire(&backend, request)
    });
    let AcquireOutcome::Acquired(after) = after else {
        panic!("the lock is free on a fresh server: {after:?}")
    };
    assert!(after.fencing_token > before.fencing_token);
}

/// A server paused while an elector's acquire is on its way, resumed after the lease: the
/// acquire then lands (a fresh lease on the server's clock) and is answered too late. The
/// action must not run, and the lock must be released, not left for a lease.
#[test]
fn an_acquire_answered_after_the_lease_by_a_paused_server_runs_nothing_and_is_released() {
    let Some(server) = private_server() else {
        return;
    };
    let lease_time = Duration::from_secs(2);
    // The operation timeout outlasts the pause: the answer comes, late.
    let config = config("late_locks")
        .with_connect_timeout(Duration::from_secs(1))
        .with_operation_timeout(Duration::from_secs(20));
    let backend = PostgresBackend::connect_with(&server.url(), config).unwrap();
    let key = fresh_name("late");
    // Connected, and the table made, before the pause.
    LockBackend::state(&backend, &key).unwrap();
    let options = LeaderElectionOptions::default()
        .with_node_id("node-a")
        .with_lease_time(lease_time)
        .with_use_db_time(true)
        .with_wait_time(Duration::ZERO);
    let elector = leader_blocking::LeaderElector::new(backend.clone(), options).unwrap();

    server.pause();
    let ran = std::sync::Arc::new(AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&ran);
    let name = key.to_string();
    let run = std::thread::spawn(move || {
        let answer = elector.run_if_leader(&name, || flag.store(true, Ordering::SeqCst));
        (answer, Instant::now())
    });
    std::thread::sleep(lease_time + Duration::from_millis(500));
    server.resume();
    let (answer, returned) = run.join().unwrap();

    assert!(
        !ran.load(Ordering::SeqCst),
        "the action ran on a lease already over"
    );
    assert!(
        matches!(&answer, Err(Error::LeaseLost { key: lost }) if lost == key.as_str()),
        "{answer:?}"
    );
    // The server's lease runs `lease_time` from the resume: released well before that.
    recovers(Duration::from_secs(1), || {
        match LockBackend::state(&backend, &key)?.leader() {
            None => Ok(()),
            Some(holder) => Err(Error::LeaseLost {
                key: format!("still held by {}", holder.leader_id),
            }),
        }
    });
    let took = returned.elapsed();
    assert!(
        took < lease_time / 2,
        "freed {took:?} after the late answer: it ran out rather than being released"
    );
}
