//! The edges of guarantees 8 (no orphaned lock) and 9 (renewals race the deadline) of
//! ARCHITECTURE.md on the async elector, on every runtime, through the
//! testkit's fault-injecting backend: no orphaned lock after a cancelled or failed acquire,
//! and a lease lost at its deadline when a renewal never answers.

use std::time::{Duration, Instant};

use leader_async::AsyncLeaderElector;
use leader_core::{
    AsyncLockBackend, CampaignConfig, InMemoryBackend, LeaderElectionOptions, LeadershipEvent,
    LeaseContext, LeaseMode, LockBackend, LockStatus, RevokeReason,
};
use leader_rig::{DeadlineWitness, Fault, FaultyBackend, Op};
use leader_testkit::{Runner, eventually, sleep, within};

leader_testkit::on_every_runtime!(
    a_future_dropped_mid_acquire_leaves_no_orphan,
    an_acquire_answered_with_an_error_leaves_no_orphan,
    a_campaign_adopts_what_its_failed_attempt_took,
    lost_resolves_at_the_deadline_when_a_renewal_never_answers,
    a_guard_is_lost_at_the_deadline_when_a_renewal_never_answers,
    a_campaign_term_ends_at_the_deadline_when_a_renewal_never_answers,
    an_action_that_outlived_its_lease_says_so_in_the_result,
    a_release_that_failed_after_the_action_goes_on_in_the_background,
);

/// How late after the deadline the loss may be signalled, beyond how late a plain thread
/// parked until the same deadline woke (the host's own delay, on a loaded machine).
const SIGNAL_BOUND: Duration = Duration::from_millis(50);

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(30))
}

fn elector<B: AsyncLockBackend + 'static>(
    backend: B,
    options: LeaderElectionOptions,
) -> AsyncLeaderElector<B> {
    AsyncLeaderElector::new(backend, options).unwrap()
}

/// A healthy node on the same store takes the lock within a second (not after the 30 s
/// lease an orphan would hold it for).
async fn another_node_takes_over(store: &InMemoryBackend) {
    let b = elector(
        store.clone(),
        options("b").with_wait_time(Duration::from_secs(5)),
    );
    let started = Instant::now();
    assert_eq!(b.run_if_leader("job", || async {}).await.unwrap(), Some(()));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the lock stayed taken for {:?}",
        started.elapsed()
    );
}

fn a_future_dropped_mid_acquire_leaves_no_orphan<R: Runner>(runner: &R) {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    // The store takes the lock, then the answer never comes: the caller gives up waiting.
    faulty.set(Op::Acquire, Fault::ApplyThenStall);
    let a = elector(faulty.clone(), options("a"));
    runner.block_on(async {
        let cancelled = within(
            Duration::from_millis(50),
            a.run_if_leader("job", || async { unreachable!("never elected") }),
        )
        .await;
        assert!(cancelled.is_none());
        assert_eq!(faulty.calls(Op::Acquire), 1);
        another_node_takes_over(faulty.inner()).await;
        faulty.heal();
    });
}

fn an_acquire_answered_with_an_error_leaves_no_orphan<R: Runner>(runner: &R) {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    faulty.set(Op::Acquire, Fault::ApplyThenFail);
    let a = elector(faulty.clone(), options("a"));
    runner.block_on(async {
        let err = a.run_if_leader("job", || async {}).await.unwrap_err();
        assert!(err.is_transient(), "{err}");
        let err = a
            .acquire("job", LeaseMode::watchdog())
            .await
            .expect_err("the guard fails closed too");
        assert!(err.is_transient(), "{err}");
        another_node_takes_over(faulty.inner()).await;
    });
}

/// A release that fails after the action ran (the store did not take it) goes on in the
/// background: the lock is free soon after the store answers again, not a lease later.
fn a_release_that_failed_after_the_action_goes_on_in_the_background<R: Runner>(runner: &R) {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let a = elector(faulty.clone(), options("a"));
    let key = "job".parse().unwrap();
    runner.block_on(async {
        let ran = a
            .run_if_leader("job", || async { faulty.set(Op::Release, Fault::Fail) })
            .await
            .unwrap();
        assert_eq!(ran, Some(()));
        let holder = LockBackend::state(faulty.inner(), &key).unwrap();
        assert!(holder.leader().is_some(), "the release failed: still taken");
        faulty.clear(Op::Release);
        another_node_takes_over(faulty.inner()).await;

        let guard = a.acquire("job", LeaseMode::watchdog()).await.unwrap();
        faulty.set(Op::Release, Fault::Fail);
        guard.release().await;
        let holder = LockBackend::state(faulty.inner(), &key).unwrap();
        assert!(
            holder.leader().is_some(),
            "the guard's release failed: still taken"
        );
        faulty.clear(Op::Release);
        another_node_takes_over(faulty.inner()).await;
    });
}

fn campaign_config() -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_secs(30))
        .with_heartbeat(Duration::from_millis(100))
        .with_renew_deadline(Duration::from_secs(20))
        .with_poll_interval(Duration::from_millis(50))
}

fn a_campaign_adopts_what_its_failed_attempt_took<R: Runner>(runner: &R) {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    faulty.set(Op::Acquire, Fault::ApplyThenFail);
    let a = elector(faulty.clone(), options("a"));
    runner.block_on(async {
        let leadership = a.campaign("job", campaign_config()).unwrap();
        eventually("a failed attempt", Duration::from_secs(2), || {
            faulty.calls(Op::Acquire) >= 1
        })
        .await;
        faulty.heal();
        // The failed attempt took the lock; the next one, with the same owner token,
        // makes it the campaign's term instead of waiting 30 s for it to run out.
        let term = within(Duration::from_secs(1), leadership.wait_for_term())
            .await
            .expect("elected at the next poll");
        let stored = AsyncLockBackend::state(faulty.inner(), &a.lock_key("job").unwrap())
            .await
            .unwrap();
        assert_eq!(
            stored.leader().map(|l| l.fencing_token),
            Some(term.fencing_token())
        );
        leadership.resign().await;
        assert_eq!(
            AsyncLockBackend::state(faulty.inner(), &a.lock_key("job").unwrap())
                .await
                .unwrap()
                .status(),
            LockStatus::Empty
        );
    });
}

/// Waits for `lease` to be lost and checks it happened at its deadline.
async fn lost_at_the_deadline(lease: &LeaseContext) {
    let deadline = lease.deadline();
    let witness = DeadlineWitness::start(deadline);
    within(Duration::from_secs(5), lease.lost())
        .await
        .expect("lost() resolves");
    witness.assert_on_time(Instant::now(), SIGNAL_BOUND, "lost() resolved");
    assert!(lease.is_lost());
}

fn lost_resolves_at_the_deadline_when_a_renewal_never_answers<R: Runner>(runner: &R) {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let a = elector(
        faulty.clone(),
        options("a")
            .with_lease_time(Duration::from_millis(300))
            .with_auto_extend(true),
    );
    runner.block_on(async {
        let outcome = a
            .run_if_leader_with("job", |lease| async move {
                faulty.set(Op::Extend, Fault::Stall);
                lost_at_the_deadline(&lease).await;
                Ok::<_, ()>(())
            })
            .await
            .unwrap();
        assert!(outcome.lease_lost());
    });
}

fn a_guard_is_lost_at_the_deadline_when_a_renewal_never_answers<R: Runner>(runner: &R) {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let a = elector(faulty.clone(), options("a"));
    runner.block_on(async {
        let guard = a
            .acquire(
                "job",
                LeaseMode::Watchdog {
                    timeout: Duration::from_millis(300),
                },
            )
            .await
            .unwrap();
        faulty.set(Op::Extend, Fault::Stall);
        lost_at_the_deadline(guard.context()).await;
        guard.release().await;
        faulty.heal();
    });
}

fn a_campaign_term_ends_at_the_deadline_when_a_renewal_never_answers<R: Runner>(runner: &R) {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let a = elector(faulty.clone(), options("a"));
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_millis(900))
        .with_heartbeat(Duration::from_millis(100))
        .with_renew_deadline(Duration::from_millis(400))
        .with_poll_interval(Duration::from_millis(50));
    runner.block_on(async {
        let leadership = a.campaign("job", config).unwrap();
        let events = leadership.events();
        let term = within(Duration::from_secs(2), leadership.wait_for_term())
            .await
            .expect("elected");
        faulty.set(Op::Extend, Fault::Stall);
        // Renewals in flight when the fault was set may still move the deadline once.
        sleep(Duration::from_millis(150)).await;
        let deadline = term.deadline();
        let witness = DeadlineWitness::start(deadline);
        let reason = within(Duration::from_secs(3), async {
            loop {
                if let LeadershipEvent::Revoked { reason } = events.recv().await.unwrap() {
                    return reason;
                }
            }
        })
        .await
        .expect("revoked");
        witness.assert_on_time(Instant::now(), SIGNAL_BOUND, "Revoked");
        assert!(
            matches!(reason, RevokeReason::RenewDeadlinePassed),
            "{reason}"
        );
        assert!(term.is_lost());
        // The stalled renewal now goes through, late: the ended term stays over (the
        // campaign may lead again, but only in a new term).
        faulty.heal();
        sleep(Duration::from_millis(50)).await;
        assert!(term.is_lost());
        if let Some(next) = leadership.term() {
            assert!(next.fencing_token() > term.fencing_token());
        }
        leadership.resign().await;
    });
}

fn an_action_that_outlived_its_lease_says_so_in_the_result<R: Runner>(runner: &R) {
    let a = elector(
        InMemoryBackend::new(),
        options("a").with_lease_time(Duration::from_millis(50)),
    );
    runner.block_on(async {
        let quick = a
            .run_if_leader_result("job", || async { Ok::<_, ()>(1) })
            .await
            .unwrap();
        assert!(quick.is_elected() && !quick.lease_lost());
        let slow = a
            .run_if_leader_result("job", || async {
                sleep(Duration::from_millis(80)).await;
                Ok::<_, ()>(2)
            })
            .await
            .unwrap();
        assert_eq!(slow.value(), Some(&2));
        assert!(slow.lease_lost());
    });
}
