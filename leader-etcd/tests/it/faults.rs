//! Faults of a one-member cluster: killed (`kill -9`) or paused (SIGSTOP) under a held
//! lease, every call fails closed with a transient error naming the lock within the
//! operation timeout; the same backend recovers when the server is back, the lease still
//! its owner's. The release watch wakes waiters of other backends at once, and comes back
//! after a restart.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{bound, config, fails_fast, fast, must_acquire, private_server, recovers};
use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, Error, ExtendOutcome, LeaderElectionOptions,
    LockBackend, OwnerToken, ReleaseOutcome, ReleaseRequest, Renewal,
};
use leader_etcd::EtcdBackend;
use leader_rig::fixtures::Data;
use leader_testkit::{checks, fresh_name, wait_until};

/// Far longer than any downtime below: the lease must outlive it.
const LEASE: Duration = Duration::from_secs(30);
/// How long a restarted server may take to serve again.
const RECOVERY: Duration = Duration::from_secs(20);

#[test]
fn a_killed_server_fails_closed_and_the_lease_is_still_its_owners_after_the_restart() {
    let Some(mut server) = private_server() else {
        return;
    };
    let config = fast("killed");
    let bound = bound(&config);
    let backend = EtcdBackend::connect_with(&server.url(), config).unwrap();
    let key = fresh_name("killed");
    let lease = must_acquire(&backend, &key, "node-a", LEASE);

    server.kill();
    let down = Instant::now();
    checks::a_stopped_server_fails_closed_within_the_timeout(
        &backend, &lease, bound, false, "etcd",
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

    // Back on its data: the lease's TTL starts over (a new leader), and the downtime was
    // well short of it, so the owner still holds the lock.
    server.restart(Data::Keep).unwrap();
    let downtime = down.elapsed();
    assert!(downtime < LEASE / 2, "down for {downtime:?}");
    let state = recovers(RECOVERY, || backend.state(&key));
    assert_eq!(
        state.leader().map(|holder| holder.fencing_token),
        Some(lease.fencing_token)
    );
    let request = AcquireRequest::new(&key, OwnerToken::random(), "node-b", LEASE);
    assert!(matches!(
        backend.try_acquire(request).unwrap(),
        AcquireOutcome::Held(Some(holder)) if holder.fencing_token == lease.fencing_token
    ));
    let extended = backend.extend(Renewal::new(&lease, LEASE)).unwrap();
    assert!(
        matches!(extended, ExtendOutcome::Extended { .. }),
        "{extended:?}"
    );
    assert_eq!(
        backend
            .release(ReleaseRequest::new(&lease, Duration::ZERO))
            .unwrap(),
        ReleaseOutcome::Released
    );
}

#[test]
fn a_paused_server_times_out_within_the_timeout_and_the_backend_recovers() {
    let Some(server) = private_server() else {
        return;
    };
    let config = fast("paused");
    let bound = bound(&config);
    let backend = EtcdBackend::connect_with(&server.url(), config).unwrap();
    let key = fresh_name("paused");
    let lease = must_acquire(&backend, &key, "node-a", LEASE);

    server.pause();
    fails_fast("extend", &key, bound, || {
        backend.extend(Renewal::new(&lease, LEASE))
    });
    fails_fast("state", &key, bound, || backend.state(&key));
    fails_fast("try_acquire", &key, bound, || {
        backend.try_acquire(AcquireRequest::new(&key, OwnerToken::random(), "b", LEASE))
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    fails_fast("async state", &key, bound, || {
        runtime.block_on(leader_core::AsyncLockBackend::state(&backend, &key))
    });
    server.resume();

    let state = recovers(RECOVERY, || backend.state(&key));
    assert_eq!(
        state.leader().map(|holder| holder.fencing_token),
        Some(lease.fencing_token)
    );
    let extended = recovers(RECOVERY, || backend.extend(Renewal::new(&lease, LEASE)));
    assert!(matches!(extended, ExtendOutcome::Extended { .. }));
}

/// Starts the release watch of `backend` and waits until it is up.
fn listening(backend: &EtcdBackend) {
    assert!(backend.release_events().is_some());
    wait_until("the release watch", Duration::from_secs(10), || {
        backend.is_listening()
    });
}

/// A waiting elector on `waiter` (wait time far longer than the test) for a lock
/// `holder` holds takes it soon after `holder` releases it: the time from the release to
/// the action.
fn elector_wakes_after_release(holder: &EtcdBackend, waiter: &EtcdBackend) -> Duration {
    let key = fresh_name("elector-wake");
    let lease = must_acquire(holder, &key, "holder", LEASE);
    let options = LeaderElectionOptions::default()
        .with_node_id("waiter")
        .with_wait_time(Duration::from_secs(60))
        .with_lease_time(LEASE);
    let elector = leader_blocking::LeaderElector::new(waiter.clone(), options).unwrap();
    let started = Arc::new(AtomicBool::new(false));
    let waiting = {
        let (started, name) = (Arc::clone(&started), key.to_string());
        std::thread::spawn(move || {
            started.store(true, Ordering::SeqCst);
            elector
                .run_if_leader(&name, Instant::now)
                .unwrap()
                .expect("the waiter led")
        })
    };
    // The waiter has tried once and found the lock held: it is waiting.
    wait_until("the waiter to try", Duration::from_secs(10), || {
        started.load(Ordering::SeqCst)
    });
    std::thread::sleep(Duration::from_millis(300));
    let released = Instant::now();
    assert_eq!(
        holder
            .release(ReleaseRequest::new(&lease, Duration::ZERO))
            .unwrap(),
        ReleaseOutcome::Released
    );
    let ran_at = waiting.join().unwrap();
    ran_at.duration_since(released)
}

#[test]
fn a_release_wakes_waiters_of_other_backends_and_the_watch_comes_back_after_a_restart() {
    let Some(mut server) = private_server() else {
        return;
    };
    let holder = EtcdBackend::connect_with(&server.url(), config("watch")).unwrap();
    let waiter = EtcdBackend::connect_with(&server.url(), config("watch")).unwrap();
    listening(&waiter);
    // The listener is woken by the watch alone: nothing polls for it.
    checks::a_release_by_another_node_wakes_only_that_locks_waiters(
        &holder,
        &waiter,
        Duration::from_millis(300),
    );
    let took = elector_wakes_after_release(&holder, &waiter);
    assert!(took < Duration::from_millis(500), "woken after {took:?}");

    // The server goes: the watch notices, comes back with it, and wakes every waiter
    // (releases may have been missed meanwhile).
    let anything = waiter.release_events().unwrap().listen("anything");
    server.kill();
    wait_until("the watch to notice", Duration::from_secs(10), || {
        !waiter.is_listening()
    });
    server.restart(Data::Keep).unwrap();
    assert!(anything.wait_timeout(RECOVERY), "nobody was told to retry");
    assert!(waiter.is_listening());
    recovers(RECOVERY, || holder.state(&fresh_name("up")));
    checks::a_release_by_another_node_wakes_only_that_locks_waiters(
        &holder,
        &waiter,
        Duration::from_millis(300),
    );
    let took = elector_wakes_after_release(&holder, &waiter);
    assert!(took < Duration::from_millis(500), "woken after {took:?}");
}
