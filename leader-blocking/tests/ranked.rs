//! Ranked campaigns when listing the candidates fails or hangs: the lock still decides,
//! and the leader's loop is never held up by a listing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use leader_blocking::LeaderElector;
use leader_core::{
    CampaignConfig, InMemoryBackend, LeaderElectionOptions, LeadershipEvent, RevokeReason,
};
use leader_testkit::{Fault, FaultyBackend, Op};

fn ranked(rank: u32) -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_millis(1500))
        .with_heartbeat(Duration::from_millis(250))
        .with_poll_interval(Duration::from_millis(50))
        .with_rank(rank)
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

/// DESIGN §4.7 for a ranked leader: a survey that hangs past the term's deadline ends the
/// term at the deadline (its `Revoked` event then), not a heartbeat later.
#[test]
fn a_hanging_listing_ends_the_term_at_its_deadline() {
    const HEARTBEAT: Duration = Duration::from_secs(1);
    let config = ranked(1)
        .with_lease_time(Duration::from_secs(3))
        .with_heartbeat(HEARTBEAT)
        .with_renew_deadline(Duration::from_secs(2));
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
    // Renewed right before this listing: the term now ends at this deadline.
    let deadline = term.deadline();
    let revoked = loop {
        match events.recv_blocking() {
            Some(LeadershipEvent::Revoked { reason }) => break (reason, Instant::now()),
            Some(_) => {}
            None => panic!("the events ended before the term did"),
        }
    };
    backend.clear(Op::List);
    assert!(
        matches!(revoked.0, RevokeReason::RenewDeadlinePassed),
        "{:?}",
        revoked.0
    );
    let late = revoked.1.saturating_duration_since(deadline);
    assert!(
        late < HEARTBEAT / 2,
        "revoked {late:?} after the deadline (a heartbeat is {HEARTBEAT:?})"
    );
    leadership.resign();
}
