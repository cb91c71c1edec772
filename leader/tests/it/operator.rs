//! The operator's `force_release` seen by the electors, on every backend: the holder's
//! elector loses its lease at its next renewal (not at its deadline) and the next holder's
//! fencing token is above the forced one's; and on the backends that notify releases, a
//! force release wakes the waiters of other nodes at once and hands the lock to a
//! waiting elector.

use crate::on_every_backend;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::notified::{Notified, median, must_acquire};
use leader::{AnyBackend, ForceReleaseOutcome, LeaderElectionOptions, LeaderElector, LeaseMode};
use leader_core::{Backend, LockBackend};
use leader_testkit::fresh_name;

fn force_release_makes_the_holder_lose_its_lease_at_its_next_renewal(backend: AnyBackend) {
    let options = LeaderElectionOptions::default().with_node_id("node-a");
    let elector = LeaderElector::new(backend.clone(), options).unwrap();
    let lock = fresh_name("forced").to_string();
    // Renewed every 3 s: without the renewal finding it gone, the lease would still be
    // certainly held for 6 s after the force release.
    let timeout = Duration::from_secs(9);
    let guard = elector
        .acquire(&lock, LeaseMode::Watchdog { timeout })
        .unwrap();

    let forced_at = Instant::now();
    match elector.force_release(&lock).unwrap() {
        ForceReleaseOutcome::Released(holder) => {
            assert_eq!(holder.leader_id, "node-a");
            assert_eq!(holder.fencing_token, guard.fencing_token());
        }
        other => panic!("the guard's lock must be force-released: {other:?}"),
    }
    assert!(
        guard.context().wait_lost_timeout(Duration::from_secs(20)),
        "the guard never heard of the force release"
    );
    let noticed = forced_at.elapsed();
    assert!(
        noticed < timeout * 2 / 3,
        "lost after {noticed:?}: by its deadline, not at its next renewal"
    );
    assert!(guard.is_lost());

    // The lock is free, and the next holder's token is above the forced one's.
    let other = LeaderElector::new(backend, LeaderElectionOptions::default()).unwrap();
    let next = other
        .acquire(&lock, LeaseMode::Watchdog { timeout })
        .unwrap();
    assert!(next.fencing_token() > guard.fencing_token());
    drop(guard);
    next.release().unwrap();
}

on_every_backend!(force_release_makes_the_holder_lose_its_lease_at_its_next_renewal);

/// The release notification itself: only another backend's session can hear it, and
/// forcing a free lock sends none.
fn a_force_release_notifies_the_waiters_of_other_nodes(servers: &Notified) {
    let operator = servers.listening();
    let waiter = servers.listening();
    let key = fresh_name("notify");
    let free = waiter.release_events().unwrap().listen(key.as_str());
    assert_eq!(
        LockBackend::force_release(&operator, &key).unwrap(),
        ForceReleaseOutcome::NotHeld
    );
    assert!(
        !free.wait_timeout(Duration::from_millis(200)),
        "forcing a free lock notifies nobody"
    );
    must_acquire(&operator, &key, "holder", Duration::from_secs(60));
    let woken = waiter.release_events().unwrap().listen(key.as_str());
    assert!(matches!(
        LockBackend::force_release(&operator, &key).unwrap(),
        ForceReleaseOutcome::Released(_)
    ));
    assert!(
        woken.wait_timeout(Duration::from_secs(2)),
        "the force release sent no notification"
    );
}

/// Node A's elector holds a lock (renewed every second); B's elector (its own backend)
/// waits for it; an operator (a third backend) force-releases it once B's backoff has
/// grown. B gets the lock with a higher fencing token, and A learns of the loss at its
/// next renewal. The time from the force release to B's acquisition.
fn one_forced_handoff(servers: &Notified) -> Duration {
    let name = fresh_name("stuck");
    let options = |node: &str| {
        LeaderElectionOptions::default()
            .with_node_id(node)
            .with_wait_time(Duration::from_secs(10))
    };
    let holder = LeaderElector::new(servers.listening(), options("stuck-node")).unwrap();
    let stuck = holder
        .acquire(
            name.as_str(),
            LeaseMode::Watchdog {
                timeout: Duration::from_secs(3),
            },
        )
        .unwrap();

    let waiter = LeaderElector::new(servers.listening(), options("waiter")).unwrap();
    let (acquired_tx, acquired) = mpsc::channel();
    let waiter_name = name.to_string();
    let waiter_thread = std::thread::spawn(move || {
        let guard = waiter.acquire(&waiter_name, LeaseMode::watchdog());
        acquired_tx.send(Instant::now()).unwrap();
        guard
    });
    // Long enough for the waiter to find the lock held and its backoff to reach delays of
    // 64 ms and more.
    std::thread::sleep(Duration::from_millis(400));

    let operator = servers.listening();
    let released_at = Instant::now();
    match LockBackend::force_release(&operator, &name).unwrap() {
        ForceReleaseOutcome::Released(holder) => {
            assert_eq!(holder.leader_id, "stuck-node");
            assert_eq!(holder.fencing_token, stuck.fencing_token());
        }
        other => panic!("the stuck holder must be released, got {other:?}"),
    }
    let acquired_at = acquired
        .recv_timeout(Duration::from_secs(5))
        .expect("the waiter acquires the lock");
    let took = acquired_at.saturating_duration_since(released_at);
    let taken = waiter_thread.join().unwrap().unwrap();
    assert!(taken.fencing_token() > stuck.fencing_token());

    assert!(
        stuck.context().wait_lost_timeout(Duration::from_secs(5)),
        "the old holder learns of the loss at its next renewal"
    );
    assert!(stuck.is_lost());
    drop(taken);
    took
}

/// Three forced handoffs, printed; `within` checks their times.
fn forced_handoffs(kind: &str, within: impl FnOnce(&[Duration])) {
    let Some(servers) = Notified::on(kind, "operator_locks") else {
        return;
    };
    a_force_release_notifies_the_waiters_of_other_nodes(&servers);
    let handoffs: Vec<Duration> = (0..3).map(|_| one_forced_handoff(&servers)).collect();
    eprintln!("{kind}: force-release handoffs: {handoffs:?}");
    within(&handoffs);
}

mod postgres {
    use std::time::Duration;

    /// A notified waiter takes over at once, well before its polling would (250 ms
    /// between attempts by then): the median under 100 ms.
    #[test]
    fn a_force_release_wakes_the_waiters_of_other_nodes() {
        super::forced_handoffs("postgres", |handoffs| {
            let median = super::median(handoffs.to_vec());
            assert!(
                median < Duration::from_millis(100),
                "took over {median:?} after the force release"
            );
        });
    }
}

mod mongodb {
    use std::time::Duration;

    /// The force release's update reaches the waiter through the change stream: the
    /// median under 100 ms, well before its polling would (250 ms between attempts by then).
    #[test]
    fn a_force_release_wakes_the_waiters_of_other_nodes() {
        super::forced_handoffs("mongodb", |handoffs| {
            let median = super::median(handoffs.to_vec());
            assert!(
                median < Duration::from_millis(100),
                "took over {median:?} after the force release"
            );
        });
    }
}

mod etcd {
    use std::time::Duration;

    /// The force release's deletion reaches the waiter through etcd's watch: the median
    /// under 100 ms, well before its polling would (250 ms between attempts by then).
    #[test]
    fn a_force_release_wakes_the_waiters_of_other_nodes() {
        super::forced_handoffs("etcd", |handoffs| {
            let median = super::median(handoffs.to_vec());
            assert!(
                median < Duration::from_millis(100),
                "took over {median:?} after the force release"
            );
        });
    }
}

/// On Redis each handoff within two seconds, on a single server and on a cluster (the
/// release is published on whichever master holds the lock).
fn each_within_two_seconds(handoffs: &[Duration]) {
    for took in handoffs {
        assert!(
            *took < Duration::from_secs(2),
            "took over {took:?} after the force release"
        );
    }
}

mod redis {
    #[test]
    fn a_force_release_hands_the_lock_to_a_waiting_elector_at_once() {
        super::forced_handoffs("redis", super::each_within_two_seconds);
    }
}

mod redis_cluster {
    #[test]
    fn a_force_release_hands_the_lock_to_a_waiting_elector_at_once() {
        super::forced_handoffs("redis_cluster", super::each_within_two_seconds);
    }
}
