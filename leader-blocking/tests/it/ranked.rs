//! Ranked campaigns when listing the candidates fails or hangs: the lock still decides,
//! and the leader's loop is never held up by a listing.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use leader_blocking::LeaderElector;
use leader_core::{
    CampaignConfig, InMemoryBackend, LeaderElectionOptions, LeadershipEvent, ListRequest,
    LockBackend, RevokeReason,
};
use leader_rig::{Fault, FaultyBackend, Op};

fn ranked(rank: u32) -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_millis(1500))
        .with_heartbeat(Duration::from_millis(250))
        .with_poll_interval(Duration::from_millis(50))
        .with_rank(rank)
}

/// Clears every fault when dropped: declared after the handles, it is dropped before them,
/// so a failing assertion does not leave a campaign thread stuck in a stalled call (which
/// dropping its handle would wait for).
struct HealOnDrop(FaultyBackend<InMemoryBackend>);

impl Drop for HealOnDrop {
    fn drop(&mut self) {
        self.0.heal();
    }
}

fn elector(
    backend: &FaultyBackend<InMemoryBackend>,
) -> LeaderElector<FaultyBackend<InMemoryBackend>> {
    LeaderElector::new(
        backend.clone(),
        LeaderElectionOptions::default().with_node_id("n"),
    )
    .unwrap()
}

#[test]
fn a_failed_listing_leaves_the_takeover_to_the_lock() {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    backend.set(Op::List, Fault::Fail);
    let leadership = elector(&backend).campaign("job", ranked(1)).unwrap();
    assert!(
        leadership
            .wait_for_term_timeout(Duration::from_secs(5))
            .is_some(),
        "a standby whose listing fails still takes a free lock"
    );
    assert!(backend.calls(Op::List) > 0, "the campaign did try to list");
    leadership.resign();
}

#[test]
fn a_hanging_listing_does_not_hold_up_a_leader_that_resigns() {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let leadership = elector(&backend).campaign("job", ranked(1)).unwrap();
    let term = leadership
        .wait_for_term_timeout(Duration::from_secs(5))
        .unwrap();
    // The leader's next survey, after its next renewal, never gets an answer.
    backend.set(Op::List, Fault::Stall);
    let listed = backend.calls(Op::List);
    leader_testkit::wait_until("the leader lists again", Duration::from_secs(5), || {
        backend.calls(Op::List) > listed
    });
    let (done, resigned) = mpsc::channel();
    std::thread::spawn(move || {
        leadership.resign();
        let _ = done.send(());
    });
    let answered = resigned.recv_timeout(Duration::from_secs(3));
    backend.clear(Op::List);
    assert!(answered.is_ok(), "resign returned while the listing hung");
    assert!(term.is_lost());
}

/// A ranked leader whose renewals succeed keeps its term while its survey of the other
/// candidates hangs, however many renew deadlines pass; the survey's verdict counts when it
/// arrives: a higher rank that appeared meanwhile then preempts it.
#[test]
fn a_hanging_listing_does_not_end_a_healthy_term() {
    let config = ranked(1)
        .with_lease_time(Duration::from_millis(900))
        .with_heartbeat(Duration::from_millis(150))
        .with_renew_deadline(Duration::from_millis(600));
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let leadership = elector(&backend).campaign("job", config).unwrap();
    let events = leadership.events();
    let term = leadership
        .wait_for_term_timeout(Duration::from_secs(5))
        .unwrap();
    backend.set(Op::List, Fault::Stall);
    let listed = backend.calls(Op::List);
    leader_testkit::wait_until("the leader lists again", Duration::from_secs(5), || {
        backend.calls(Op::List) > listed
    });
    // A healthy node of a higher rank joins while the leader's survey hangs.
    let healthy = LeaderElector::new(
        backend.inner().clone(),
        LeaderElectionOptions::default().with_node_id("higher"),
    )
    .unwrap();
    let higher = healthy.campaign("job", config.with_rank(2)).unwrap();
    let _heal = HealOnDrop(backend.clone());
    let renewals = backend.calls(Op::Extend);
    // Five renew deadlines: each renewal succeeds, so the term goes on.
    std::thread::sleep(Duration::from_millis(600) * 5);
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
    let revoked = loop {
        match events.recv_blocking() {
            Some(LeadershipEvent::Revoked { reason }) => break reason,
            Some(_) => {}
            None => panic!("the events ended before the term did"),
        }
    };
    assert!(
        matches!(revoked, RevokeReason::Preempted { by_rank: 2 }),
        "{revoked:?}"
    );
    leader_testkit::wait_until("rank 2 leads", Duration::from_secs(5), || {
        higher.is_leader()
    });
    leadership.resign();
    higher.resign();
}

/// A leader that resigns while the heartbeat of its membership record hangs resigns at
/// once; when that heartbeat lands afterwards and writes the record again, the record is
/// released within a moment, not left to deny the rank to others for a lease.
#[test]
fn a_heartbeat_that_lands_after_the_resignation_leaves_no_record() {
    // A long lease: a record left behind would outlive the bound below many times over.
    let config = ranked(1)
        .with_lease_time(Duration::from_secs(20))
        .with_heartbeat(Duration::from_millis(200));
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let leadership = elector(&backend).campaign("job", config).unwrap();
    let _heal = HealOnDrop(backend.clone());
    leadership
        .wait_for_term_timeout(Duration::from_secs(5))
        .unwrap();
    let prefix = ListRequest::new("job#rank:");
    assert_eq!(backend.inner().list(&prefix).unwrap().locks.len(), 1);

    // The record's next heartbeat (the leader's only acquire) is held up on its way.
    backend.set(Op::Acquire, Fault::Stall);
    let sent = backend.calls(Op::Acquire);
    leader_testkit::wait_until("a heartbeat on its way", Duration::from_secs(5), || {
        backend.calls(Op::Acquire) > sent
    });
    let (done, resigned) = mpsc::channel();
    std::thread::spawn(move || {
        leadership.resign();
        let _ = done.send(());
    });
    let answered = resigned.recv_timeout(Duration::from_secs(2));
    assert!(answered.is_ok(), "resign returned while the heartbeat hung");
    assert!(
        backend.inner().list(&prefix).unwrap().locks.is_empty(),
        "withdrawn"
    );

    // The heartbeat lands now, after the withdrawal, and writes the record again: it must
    // be gone again, and stay gone, well within the lease.
    backend.clear(Op::Acquire);
    let cleared = Instant::now();
    let mut last_seen = None;
    while cleared.elapsed() < Duration::from_secs(3) {
        if !backend.inner().list(&prefix).unwrap().locks.is_empty() {
            last_seen = Some(cleared.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        backend.inner().list(&prefix).unwrap().locks.is_empty(),
        "the record the late heartbeat wrote is still there 3 s later (lease 20 s)"
    );
    eprintln!("after the late heartbeat, the record was last seen at {last_seen:?}");
}
