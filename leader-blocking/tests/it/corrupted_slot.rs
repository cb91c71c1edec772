//! One slot of a group whose record is corrupted (a permanent error on it alone) is
//! skipped, reported, and the other slots are used: by group runs and group campaigns.

use std::time::Duration;

use leader_blocking::LeaderGroupElector;
use leader_core::{
    AcquireRequest, CampaignConfig, Error, InMemoryBackend, LeaderElectionOptions, LeaderRunResult,
    LockBackend, LockName, OwnerToken,
};
use leader_rig::FaultyBackend;
use leader_rig::spans::SpanLog;

const SKIPPED: &str = "skipping a slot of the group that cannot be acquired (its record may be corrupted); trying the others";

fn slot(slot: u32) -> LockName {
    match slot {
        0 => LockName::new("consumers").unwrap(),
        n => LockName::new(format!("consumers#{n}")).unwrap(),
    }
}

fn group_with_slot_0_corrupted() -> LeaderGroupElector<FaultyBackend<InMemoryBackend>> {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    backend.corrupt(&slot(0));
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    LeaderGroupElector::new(backend, options, 2).unwrap()
}

#[test]
fn a_group_run_skips_a_corrupted_slot_and_takes_another() {
    let group = group_with_slot_0_corrupted();
    // Each run tries the slots from a random one: every order meets the corrupted slot.
    for _ in 0..16 {
        let outcome = group
            .run_if_leader_with("consumers", |lease| Ok::<_, Error>(lease.slot()))
            .unwrap();
        let LeaderRunResult::Elected { value: slot, .. } = outcome else {
            panic!("slot 1 was free: {outcome:?}");
        };
        assert_eq!(slot, 1);
    }
}

#[test]
fn a_group_with_every_usable_slot_held_reports_the_corrupted_one() {
    let group = group_with_slot_0_corrupted();
    let usable = slot(1);
    let other = AcquireRequest::new(
        &usable,
        OwnerToken::random(),
        "other",
        Duration::from_secs(60),
    );
    group
        .elector()
        .backend()
        .inner()
        .try_acquire(other)
        .unwrap();
    let err = group.run_if_leader("consumers", || ()).unwrap_err();
    assert!(!err.is_transient(), "{err}");
    assert_eq!(err.lock_key(), Some("consumers"), "{err}");
}

#[test]
fn a_group_campaign_leads_in_another_slot_and_reports_the_corrupted_one() {
    let log = SpanLog::global();
    let group = group_with_slot_0_corrupted();
    let leadership = group
        .campaign("consumers", CampaignConfig::default())
        .unwrap();
    // A campaign's attempts all start from one random slot: the corrupted one, or not.
    let term = leadership
        .wait_for_term_timeout(Duration::from_secs(10))
        .expect("the usable slot is taken");
    assert_eq!(term.slot(), 1);
    let store = group.elector().backend().inner();
    assert!(store.state(&slot(1)).unwrap().leader().is_some());
    assert!(
        store.state(&slot(0)).unwrap().leader().is_none(),
        "one campaign, one slot"
    );
    leadership.resign();
    // A run meets the corrupted slot when it starts there (a run that starts at the free
    // slot takes it without looking further), and reports it each time: 16 runs all
    // start at the free slot once in 65,536.
    for _ in 0..16 {
        group.run_if_leader("consumers", || ()).unwrap();
    }
    assert!(
        !log.events(SKIPPED).is_empty(),
        "the corrupted slot is reported"
    );
}
