//! Group and ranked leadership on the blocking elector: bad input is a typed error,
//! groups keep tenant scoping, and an operator reaches a slot by its name.

use std::time::Duration;

use leader_blocking::{LeaderElector, LeaderGroupElector};
use leader_core::{
    AcquireRequest, CampaignConfig, Error, ForceReleaseOutcome, GroupSlots, InMemoryBackend,
    LeaderElectionOptions, LeaseMode, LockBackend, LockName, OptionsError, OwnerToken, SlotOutcome,
    SlotRequest,
};

fn options() -> LeaderElectionOptions {
    LeaderElectionOptions::default().with_wait_time(Duration::ZERO)
}

#[test]
fn slot_counts_and_names_that_do_not_fit_are_typed_errors() {
    let elector = LeaderElector::new(InMemoryBackend::new(), options()).unwrap();
    for slots in [0, 1025] {
        assert!(matches!(
            elector.group(slots),
            Err(Error::InvalidOptions(
                OptionsError::GroupSlotsOutOfRange { .. }
            ))
        ));
    }
    let group = elector.group(2).unwrap();
    let longest = "x".repeat(LockName::MAX_LEN);
    assert!(matches!(
        group.run_if_leader(&longest, || ()),
        Err(Error::InvalidName(_))
    ));
    assert!(matches!(group.state(&longest), Err(Error::InvalidName(_))));
    let ranked = CampaignConfig::default().with_rank(1);
    assert!(matches!(
        elector.campaign(&"y".repeat(240), ranked),
        Err(Error::InvalidName(_))
    ));
    assert!(matches!(
        group.run_if_leader("tenant:acme:job", || ()),
        Err(Error::InvalidName(_))
    ));
}

#[test]
fn a_group_of_one_is_the_single_lock() {
    let backend = InMemoryBackend::new();
    let elector = LeaderElector::new(backend, options()).unwrap();
    let one = elector.group(1).unwrap();
    let guard = elector.acquire("report", LeaseMode::watchdog()).unwrap();
    assert_eq!(one.run_if_leader("report", || ()).unwrap(), None);
    drop(guard);
    let outcome = one
        .run_if_leader_result("report", || Ok::<_, String>(()))
        .unwrap();
    assert_eq!(outcome.slot(), Some(0));
}

#[test]
fn tenant_groups_live_under_the_tenant_and_report_the_callers_names() {
    let backend = InMemoryBackend::new();
    let group = LeaderGroupElector::new(backend.clone(), options(), 2)
        .unwrap()
        .for_tenant("acme")
        .unwrap();
    let outcome = group
        .run_if_leader_with("sync", |lease| {
            assert_eq!(lease.lock_name(), "sync");
            let (key, shown) = match lease.slot() {
                0 => ("tenant:acme:sync".to_owned(), "sync".to_owned()),
                n => (format!("tenant:acme:sync#{n}"), format!("sync#{n}")),
            };
            let raw = backend.state(&LockName::new(key).unwrap()).unwrap();
            assert_eq!(raw.leader().unwrap().fencing_token, lease.fencing_token());
            let state = group.state("sync").unwrap();
            assert_eq!(state.slot(lease.slot()).unwrap().lock_name(), shown);
            assert_eq!(state.holders().count(), 1);
            Ok::<_, String>(())
        })
        .unwrap();
    assert!(outcome.is_elected());
    assert_eq!(group.tenant().unwrap().as_str(), "acme");
}

#[test]
fn group_runs_keep_the_options_of_a_single_lock() {
    // Auto-extend renews the slot's lease through an action 2.5 leases long.
    let renewed = options()
        .with_lease_time(Duration::from_millis(600))
        .with_auto_extend(true);
    let group = LeaderGroupElector::new(InMemoryBackend::new(), renewed, 2).unwrap();
    let outcome = group
        .run_if_leader_with("long", |lease| {
            std::thread::sleep(Duration::from_millis(1500));
            Ok::<_, String>(lease.is_lost())
        })
        .unwrap();
    assert_eq!(outcome.value(), Some(&false), "{outcome:?}");
    assert!(!outcome.lease_lost());

    // The minimum lease keeps the slot after a short action returned, then frees it.
    let kept = options().with_min_lease_time(Duration::from_millis(1500));
    let group = LeaderGroupElector::new(InMemoryBackend::new(), kept, 2).unwrap();
    let outcome = group
        .run_if_leader_result("short", || Ok::<_, String>(()))
        .unwrap();
    let slot = outcome.slot().unwrap();
    let state = group.state("short").unwrap();
    assert!(state.slot(slot).unwrap().leader().is_some(), "{state:?}");
    let freed = std::time::Instant::now();
    while group
        .state("short")
        .unwrap()
        .slot(slot)
        .unwrap()
        .leader()
        .is_some()
    {
        assert!(
            freed.elapsed() < Duration::from_secs(5),
            "the minimum lease ends"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An operator can look at and free what a listing shows: a slot of a group, or a ranked
/// candidate's record, by its derived name; anything else after `#` is a typed error.
#[test]
fn slots_are_looked_at_and_freed_by_their_derived_names() {
    let backend = InMemoryBackend::new();
    let operator = LeaderElector::new(backend.clone(), options()).unwrap();
    let acme = operator.for_tenant("acme").unwrap();
    let keys = GroupSlots::new(3)
        .unwrap()
        .keys(&acme.lock_key("orders").unwrap())
        .unwrap();
    for _ in 0..3 {
        let owner = OwnerToken::random();
        let request = AcquireRequest::new(keys.group(), owner, "node", Duration::from_secs(60));
        let taken = backend
            .try_acquire_slot(SlotRequest::group(request, &keys, 0))
            .unwrap();
        assert!(matches!(taken, SlotOutcome::Acquired { .. }), "{taken:?}");
    }
    assert_eq!(
        acme.storage_key("orders#2").unwrap(),
        "tenant:acme:orders#2"
    );
    let state = acme.state("orders#2").unwrap();
    assert!(state.leader().is_some(), "{state:?}");
    assert_eq!(state.lock_name(), "orders#2");
    let freed = acme.force_release("orders#2").unwrap();
    assert!(
        matches!(freed, ForceReleaseOutcome::Released(_)),
        "{freed:?}"
    );
    assert!(acme.state("orders#2").unwrap().leader().is_none());
    assert!(
        acme.state("orders#1").unwrap().leader().is_some(),
        "only that slot"
    );
    for bad in [
        "orders#0",
        "orders#02",
        "orders#x",
        "orders#2:fence",
        "orders#2#1",
        "orders#rank:1",
    ] {
        assert!(
            matches!(acme.state(bad), Err(Error::InvalidName(_))),
            "{bad}"
        );
    }
    assert!(
        matches!(
            acme.run_if_leader("orders#2", || ()),
            Err(Error::InvalidName(_))
        ),
        "a derived name is never a caller's lock"
    );
}
