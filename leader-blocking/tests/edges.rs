//! The edges of guarantees 8 (no orphaned lock) and 9 (renewals race the deadline) of
//! ARCHITECTURE.md on the blocking electors, through the testkit's
//! fault-injecting backend: no orphaned lock after a failed acquire, and a lease lost at
//! its deadline when a renewal never answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use leader_blocking::LeaderElector;
use leader_core::{
    CampaignConfig, InMemoryBackend, LeaderElectionOptions, LeadershipEvent, LeaseContext,
    LeaseMode, LockBackend, LockStatus, RevokeReason,
};
use leader_rig::{DeadlineWitness, Fault, FaultyBackend, Op};
use leader_testkit::{wait_until, within};

/// How late after the deadline the loss may be signalled, beyond how late a plain thread
/// parked until the same deadline woke (the host's own delay, on a loaded machine).
const SIGNAL_BOUND: Duration = Duration::from_millis(50);

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(30))
}

fn faulty_elector(
    node: &str,
    options: LeaderElectionOptions,
) -> (
    FaultyBackend<InMemoryBackend>,
    LeaderElector<FaultyBackend<InMemoryBackend>>,
) {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let elector = LeaderElector::new(faulty.clone(), options.with_node_id(node)).unwrap();
    (faulty, elector)
}

/// A healthy node on the same store takes the lock within a second (not after the 30 s
/// lease an orphan would hold it for).
fn another_node_takes_over(store: &InMemoryBackend) {
    let b = LeaderElector::new(
        store.clone(),
        options("b").with_wait_time(Duration::from_secs(5)),
    )
    .unwrap();
    let started = Instant::now();
    assert_eq!(b.run_if_leader("job", || ()).unwrap(), Some(()));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the lock stayed taken for {:?}",
        started.elapsed()
    );
}

#[test]
fn an_acquire_answered_with_an_error_leaves_no_orphan() {
    let (faulty, a) = faulty_elector("a", options("a"));
    faulty.set(Op::Acquire, Fault::ApplyThenFail);
    let err = a.run_if_leader("job", || unreachable!()).unwrap_err();
    assert!(err.is_transient(), "{err}");
    another_node_takes_over(faulty.inner());

    let err = a
        .acquire("job", LeaseMode::watchdog())
        .expect_err("the guard fails closed too");
    assert!(err.is_transient(), "{err}");
    another_node_takes_over(faulty.inner());
}

/// A release that fails after the action ran (the store did not take it) goes on in the
/// background: the lock is free soon after the store answers again, not a lease later.
#[test]
fn a_release_that_failed_after_the_action_goes_on_in_the_background() {
    let (faulty, a) = faulty_elector("a", options("a"));
    let ran = a
        .run_if_leader("job", || faulty.set(Op::Release, Fault::Fail))
        .unwrap();
    assert_eq!(ran, Some(()));
    assert!(
        faulty
            .inner()
            .state(&"job".parse().unwrap())
            .unwrap()
            .leader()
            .is_some(),
        "the release failed: the lock is still taken"
    );
    faulty.clear(Op::Release);
    another_node_takes_over(faulty.inner());

    // A guard's release that fails says so, and goes on all the same.
    let guard = a.acquire("job", LeaseMode::watchdog()).unwrap();
    faulty.set(Op::Release, Fault::Fail);
    let err = guard.release().unwrap_err();
    assert!(err.is_transient(), "{err}");
    faulty.clear(Op::Release);
    another_node_takes_over(faulty.inner());
}

/// Blocks until `lease` is lost and checks it happened at its deadline.
fn lost_at_the_deadline(lease: &LeaseContext) {
    let deadline = lease.deadline();
    let witness = DeadlineWitness::start(deadline);
    assert!(lease.wait_lost_timeout(Duration::from_secs(5)), "lost");
    witness.assert_on_time(Instant::now(), SIGNAL_BOUND, "the loss");
    futures::executor::block_on(lease.lost());
}

#[test]
fn the_watchdog_loses_the_lease_at_the_deadline_when_a_renewal_never_answers() {
    let (faulty, a) = faulty_elector(
        "a",
        options("a")
            .with_lease_time(Duration::from_millis(300))
            .with_auto_extend(true),
    );
    let outcome = a
        .run_if_leader_with("job", |lease| {
            faulty.set(Op::Extend, Fault::Stall);
            lost_at_the_deadline(lease);
            Ok::<_, ()>(())
        })
        .unwrap();
    assert!(outcome.lease_lost());
    faulty.heal();
}

#[test]
fn a_guard_is_lost_at_the_deadline_when_a_renewal_never_answers() {
    let (faulty, a) = faulty_elector("a", options("a"));
    let guard = a
        .acquire(
            "job",
            LeaseMode::Watchdog {
                timeout: Duration::from_millis(300),
            },
        )
        .unwrap();
    faulty.set(Op::Extend, Fault::Stall);
    lost_at_the_deadline(guard.context());
    let started = Instant::now();
    guard.release().unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "releasing does not wait for the stalled renewal"
    );
    faulty.heal();
}

#[test]
fn a_campaign_term_ends_at_the_deadline_when_a_renewal_never_answers() {
    let (faulty, a) = faulty_elector("a", options("a"));
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_millis(900))
        .with_heartbeat(Duration::from_millis(100))
        .with_renew_deadline(Duration::from_millis(400))
        .with_poll_interval(Duration::from_millis(50));
    let leadership = a.campaign("job", config).unwrap();
    let events = leadership.events();
    let term = leadership
        .wait_for_term_timeout(Duration::from_secs(2))
        .expect("elected");
    faulty.set(Op::Extend, Fault::Stall);
    // A renewal in flight when the fault was set may still move the deadline once.
    std::thread::sleep(Duration::from_millis(150));
    let deadline = term.deadline();
    let witness = DeadlineWitness::start(deadline);
    let reason = futures::executor::block_on(within(Duration::from_secs(3), async {
        loop {
            if let LeadershipEvent::Revoked { reason } = events.recv().await.unwrap() {
                return reason;
            }
        }
    }))
    .expect("revoked");
    witness.assert_on_time(Instant::now(), SIGNAL_BOUND, "Revoked");
    assert!(
        matches!(reason, RevokeReason::RenewDeadlinePassed),
        "{reason}"
    );
    assert!(term.is_lost());
    faulty.heal();
    std::thread::sleep(Duration::from_millis(50));
    assert!(term.is_lost(), "a late renewal does not revive the term");
    let started = Instant::now();
    leadership.resign();
    assert!(started.elapsed() < Duration::from_millis(500));
}

/// A campaign whose 30 s lease an orphan would hold far longer than the tests wait.
fn long_lease_campaign(poll_interval: Duration) -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_secs(30))
        .with_heartbeat(Duration::from_millis(100))
        .with_renew_deadline(Duration::from_secs(20))
        .with_poll_interval(poll_interval)
}

#[test]
fn a_campaign_adopts_what_its_failed_attempt_took() {
    let (faulty, a) = faulty_elector("a", options("a"));
    faulty.set(Op::Acquire, Fault::ApplyThenFail);
    let leadership = a
        .campaign("job", long_lease_campaign(Duration::from_millis(50)))
        .unwrap();
    wait_until("a failed attempt", Duration::from_secs(2), || {
        faulty.calls(Op::Acquire) >= 1
    });
    faulty.heal();
    let term = leadership
        .wait_for_term_timeout(Duration::from_secs(1))
        .expect("elected at the next poll, not after the 30 s lease");
    let key = a.lock_key("job").unwrap();
    let stored = LockBackend::state(faulty.inner(), &key).unwrap();
    assert_eq!(
        stored.leader().map(|l| l.fencing_token),
        Some(term.fencing_token())
    );
    leadership.resign();
    assert_eq!(
        LockBackend::state(faulty.inner(), &key).unwrap().status(),
        LockStatus::Empty
    );
}

#[test]
fn a_campaign_stopped_after_a_failed_attempt_leaves_no_orphan() {
    let (faulty, a) = faulty_elector("a", options("a"));
    faulty.set(Op::Acquire, Fault::ApplyThenFail);
    let leadership = a
        .campaign("job", long_lease_campaign(Duration::from_secs(10)))
        .unwrap();
    wait_until("a failed attempt", Duration::from_secs(2), || {
        faulty.calls(Op::Acquire) >= 1
    });
    leadership.resign();
    another_node_takes_over(faulty.inner());
}

#[test]
fn an_action_that_outlived_its_lease_says_so_in_the_result() {
    let a = LeaderElector::new(
        InMemoryBackend::new(),
        options("a").with_lease_time(Duration::from_millis(50)),
    )
    .unwrap();
    let quick = a.run_if_leader_result("job", || Ok::<_, ()>(1)).unwrap();
    assert!(quick.is_elected() && !quick.lease_lost());
    let slow = a
        .run_if_leader_result("job", || {
            std::thread::sleep(Duration::from_millis(80));
            Ok::<_, ()>(2)
        })
        .unwrap();
    assert_eq!(slow.value(), Some(&2));
    assert!(slow.lease_lost());
}

/// While the store is down every failed call leaves a possibly orphaned lease to release
/// until the store answers; a timer thread and the backend's few release threads (more
/// only while releases hang) do that, not a thread per call.
#[cfg(target_os = "linux")]
#[test]
fn failed_calls_while_the_store_is_down_do_not_start_a_thread_each() {
    /// Threads of this process that release orphans (other tests' threads come and go).
    fn orphan_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|name| name.starts_with("leader-orphan"))
            .count()
    }
    let (faulty, a) = faulty_elector("a", options("a"));
    faulty.set_all(Fault::Fail);
    for i in 0..200 {
        let err = a.run_if_leader(&format!("job-{i}"), || ()).unwrap_err();
        assert!(err.is_transient());
    }
    wait_until("the releases are attempted", Duration::from_secs(5), || {
        faulty.calls(Op::Release) >= 200
    });
    let threads = orphan_threads();
    // The timer, and at most eight release threads per backend value.
    assert!(threads <= 1 + 8, "{threads} threads release 200 orphans");
}
