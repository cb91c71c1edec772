//! Ranked campaigns on the async elector, on every runtime, when the survey of the other
//! candidates or the heartbeat of the membership record hangs: the term is the lock's,
//! and a resignation neither waits for them nor leaves the record behind.

use std::time::{Duration, Instant};

use leader_async::AsyncLeaderElector;
use leader_core::{
    AsyncLockBackend, CampaignConfig, InMemoryBackend, LeaderElectionOptions, LeadershipEvent,
    ListRequest, RevokeReason,
};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_testkit::{Runner, eventually, sleep, within};

leader_testkit::on_every_runtime!(
    a_hanging_listing_does_not_end_a_healthy_term,
    a_leader_resigns_at_once_while_its_heartbeat_hangs_and_leaves_no_record,
);

fn ranked(rank: u32) -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_millis(900))
        .with_heartbeat(Duration::from_millis(150))
        .with_renew_deadline(Duration::from_millis(600))
        .with_poll_interval(Duration::from_millis(50))
        .with_rank(rank)
}

fn elector<B: AsyncLockBackend + 'static>(backend: B, node: &str) -> AsyncLeaderElector<B> {
    AsyncLeaderElector::new(backend, LeaderElectionOptions::default().with_node_id(node)).unwrap()
}

/// A ranked leader whose renewals succeed keeps its term while its survey hangs, however
/// many renew deadlines pass; the survey's verdict counts when it arrives: a higher rank
/// that appeared meanwhile then preempts it.
fn a_hanging_listing_does_not_end_a_healthy_term<R: Runner>(runner: &R) {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    runner.block_on(async {
        let leadership = elector(backend.clone(), "n")
            .campaign("job", ranked(1))
            .unwrap();
        let events = leadership.events();
        let term = within(Duration::from_secs(5), leadership.wait_for_term())
            .await
            .expect("elected");
        backend.set(Op::List, Fault::Stall);
        let listed = backend.calls(Op::List);
        eventually("the leader lists again", Duration::from_secs(5), || {
            backend.calls(Op::List) > listed
        })
        .await;
        let higher = elector(backend.inner().clone(), "higher")
            .campaign("job", ranked(2))
            .unwrap();
        let renewals = backend.calls(Op::Extend);
        // Five renew deadlines: each renewal succeeds, so the term goes on.
        sleep(Duration::from_millis(600) * 5).await;
        assert!(
            backend.calls(Op::Extend) >= renewals + 5,
            "the leader kept renewing on schedule"
        );
        assert!(!term.is_lost(), "a hanging survey ended a healthy term");
        assert!(leadership.is_leader() && !higher.is_leader());
        let seen: Vec<_> = std::iter::from_fn(|| events.try_recv()).collect();
        assert!(
            !seen
                .iter()
                .any(|e| matches!(e, LeadershipEvent::Revoked { .. })),
            "{seen:?}"
        );

        // The survey answers: it finds rank 2, and the leader hands over.
        backend.clear(Op::List);
        let reason = within(Duration::from_secs(5), async {
            loop {
                if let LeadershipEvent::Revoked { reason } = events.recv().await.unwrap() {
                    return reason;
                }
            }
        })
        .await
        .expect("preempted once the survey answered");
        assert!(
            matches!(reason, RevokeReason::Preempted { by_rank: 2 }),
            "{reason}"
        );
        eventually("rank 2 leads", Duration::from_secs(5), || {
            higher.is_leader()
        })
        .await;
        leadership.resign().await;
        higher.resign().await;
    });
}

/// A leader that resigns while the heartbeat of its membership record hangs resigns at
/// once (the heartbeat runs beside its loop) and withdraws the record.
fn a_leader_resigns_at_once_while_its_heartbeat_hangs_and_leaves_no_record<R: Runner>(runner: &R) {
    // A long lease: a record left behind would outlive the bounds below many times over.
    let config = ranked(1)
        .with_lease_time(Duration::from_secs(20))
        .with_heartbeat(Duration::from_millis(200))
        .with_renew_deadline(Duration::from_secs(10));
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let prefix = ListRequest::new("job#rank:");
    runner.block_on(async {
        let leadership = elector(backend.clone(), "n")
            .campaign("job", config)
            .unwrap();
        within(Duration::from_secs(5), leadership.wait_for_term())
            .await
            .expect("elected");
        assert_eq!(backend.inner().list(&prefix).await.unwrap().locks.len(), 1);
        backend.set(Op::Acquire, Fault::Stall);
        let sent = backend.calls(Op::Acquire);
        eventually("a heartbeat on its way", Duration::from_secs(5), || {
            backend.calls(Op::Acquire) > sent
        })
        .await;
        let started = Instant::now();
        let resigned = within(Duration::from_secs(2), leadership.resign()).await;
        assert!(
            resigned.is_some(),
            "resign returned while the heartbeat hung (waited {:?})",
            started.elapsed()
        );
        assert!(
            backend
                .inner()
                .list(&prefix)
                .await
                .unwrap()
                .locks
                .is_empty(),
            "the record is withdrawn"
        );
        backend.clear(Op::Acquire);
        sleep(Duration::from_millis(500)).await;
        assert!(
            backend
                .inner()
                .list(&prefix)
                .await
                .unwrap()
                .locks
                .is_empty(),
            "nothing wrote the record again"
        );
    });
}
