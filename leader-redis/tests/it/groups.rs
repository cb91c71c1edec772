//! Leader groups on Redis: one script a attempt whatever the group's size, the caller's
//! own slot renewed before a free one is taken, a corrupted slot reported by its key, and slot keys
//! listed under their group.

use crate::common;

use std::time::Duration;

use crate::common::RedisHarness;
use leader_core::{
    AcquireRequest, Error, GroupKeys, GroupSlots, ListRequest, LockBackend, LockName, OwnerToken,
    ReleaseRequest, SlotOutcome, SlotRequest,
};
use leader_testkit::fresh_name;

const LEASE: Duration = Duration::from_secs(60);

fn group(slots: u32) -> GroupKeys {
    GroupSlots::new(slots)
        .unwrap()
        .keys(&fresh_name("redis-group"))
        .unwrap()
}

fn attempt(
    backend: &impl LockBackend,
    keys: &GroupKeys,
    owner: OwnerToken,
    first: usize,
) -> Result<SlotOutcome, Error> {
    let request = AcquireRequest::new(keys.group(), owner, "node", LEASE);
    backend.try_acquire_slot(SlotRequest::group(request, keys, first))
}

#[test]
fn an_attempt_on_a_full_group_is_one_script_whatever_its_size() {
    // A server of its own: no other test's scripts count.
    let Some(server) = common::private_server() else {
        return;
    };
    let harness = RedisHarness::new(common::Servers::Single(server.url()));
    let backend = harness.make();
    let keys = group(16);
    for _ in 0..16 {
        let taken = attempt(&backend, &keys, OwnerToken::random(), 0).unwrap();
        assert!(matches!(taken, SlotOutcome::Acquired { .. }), "{taken:?}");
    }
    let mut conn = harness.raw();
    let before = common::scripts_run(&mut conn);
    let full = attempt(&backend, &keys, OwnerToken::random(), 5).unwrap();
    assert!(matches!(full, SlotOutcome::Held(Some(_))), "{full:?}");
    assert_eq!(
        common::scripts_run(&mut conn) - before,
        1,
        "one round trip for 16 slots"
    );
}

#[test]
fn a_retried_attempt_renews_the_owners_slot_instead_of_taking_a_second() {
    let Some(harness) = RedisHarness::cluster() else {
        return;
    };
    let backend = harness.make();
    let keys = group(3);
    let owner = OwnerToken::random();
    let SlotOutcome::Acquired { slot: 2, lease } = attempt(&backend, &keys, owner, 2).unwrap()
    else {
        panic!("slot 2 was free");
    };
    // Slot 0 and 1 are free and come first in this order; the owner's slot 2 still wins.
    let again = attempt(&backend, &keys, owner, 0).unwrap();
    let SlotOutcome::Acquired {
        slot,
        lease: renewed,
    } = again
    else {
        panic!("the owner re-acquires: {again:?}");
    };
    assert_eq!((slot, renewed.fencing_token), (2, lease.fencing_token));
    let held: usize = (0..3)
        .filter(|slot| {
            LockBackend::state(&backend, keys.slot(*slot))
                .unwrap()
                .leader()
                .is_some()
        })
        .count();
    assert_eq!(held, 1, "one owner, one slot");
}

#[test]
fn a_full_group_with_a_record_without_expiry_is_an_error_naming_that_slot() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let keys = group(2);
    attempt(&backend, &keys, OwnerToken::random(), 0).unwrap();
    attempt(&backend, &keys, OwnerToken::random(), 0).unwrap();
    let mut conn = harness.raw();
    let slot_key = backend.lock_key(keys.slot(1));
    let _: () = redis::cmd("PERSIST")
        .arg(&slot_key)
        .query(&mut conn)
        .unwrap();
    // While the record's own end (`exp`) is ahead, it is a live lease: attempts do not
    // pay a PTTL per held slot to look for a missing expiry.
    for first in [0, 1] {
        assert!(matches!(
            attempt(&backend, &keys, OwnerToken::random(), first).unwrap(),
            SlotOutcome::Held(_)
        ));
    }
    // Past its end the key should be gone: one that is still there would never be freed.
    let _: () = redis::cmd("HSET")
        .arg(&slot_key)
        .arg("exp")
        .arg(1)
        .query(&mut conn)
        .unwrap();
    for first in [0, 1] {
        let err = attempt(&backend, &keys, OwnerToken::random(), first).unwrap_err();
        assert!(!err.is_transient(), "{err}");
        assert_eq!(err.lock_key(), Some(slot_key.as_str()), "{err}");
    }
}

#[test]
fn slot_keys_share_the_groups_hash_tag_and_list_under_their_names() {
    let Some(harness) = RedisHarness::cluster() else {
        return;
    };
    let backend = harness.make();
    let keys = group(3);
    for _ in 0..3 {
        attempt(&backend, &keys, OwnerToken::random(), 0).unwrap();
    }
    let group_key = backend.lock_key(keys.group());
    assert_eq!(backend.lock_key(keys.slot(2)), format!("{group_key}#2"));
    let listed: Vec<String> = LockBackend::list(&backend, &ListRequest::new(keys.group().as_str()))
        .unwrap()
        .locks
        .iter()
        .map(|state| state.lock_name().to_owned())
        .collect();
    let expected: Vec<String> = (0..3).map(|slot| keys.slot(slot).to_string()).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, expected, "{listed:?}");
    let slots_only =
        LockBackend::list(&backend, &ListRequest::new(format!("{}#", keys.group()))).unwrap();
    assert_eq!(slots_only.locks.len(), 2, "{slots_only:?}");
    let name = LockName::new(format!("{}#1", keys.group())).unwrap();
    assert_eq!(&name, keys.slot(1));
}

#[test]
fn a_slot_whose_record_is_not_a_lock_is_skipped_for_a_usable_one() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let keys = group(2);
    let mut conn = harness.raw();
    // Slot 0's record is corrupted: another type of value where its hash should be.
    let broken = backend.lock_key(keys.slot(0));
    let _: () = redis::cmd("SET")
        .arg(&broken)
        .arg("garbage")
        .query(&mut conn)
        .unwrap();
    for first in [0, 1] {
        let outcome = attempt(&backend, &keys, OwnerToken::random(), first).unwrap();
        let SlotOutcome::Acquired { slot: 1, lease } = outcome else {
            panic!("slot 1 is usable (from {first}): {outcome:?}");
        };
        backend
            .release(ReleaseRequest::new(&lease, Duration::ZERO))
            .unwrap();
    }

    // A group campaign leads in the usable slot, and holds that one only.
    let options = leader_core::LeaderElectionOptions::default();
    let elector = leader_blocking::LeaderGroupElector::new(backend.clone(), options, 2).unwrap();
    let leadership = elector
        .campaign(
            keys.group().as_str(),
            leader_core::CampaignConfig::default(),
        )
        .unwrap();
    let term = leadership
        .wait_for_term_timeout(Duration::from_secs(10))
        .expect("the usable slot is taken");
    assert_eq!(term.slot(), 1);
    leadership.resign();

    // With the usable slot held, the corrupted one is what the attempt reports.
    attempt(&backend, &keys, OwnerToken::random(), 0).unwrap();
    let err = attempt(&backend, &keys, OwnerToken::random(), 0).unwrap_err();
    assert!(!err.is_transient(), "{err}");
}
