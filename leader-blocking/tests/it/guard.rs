//! The must-run lock guard fails closed: an error, never a skip.

use std::time::Duration;

use leader_blocking::LeaderElector;
use leader_core::{Error, InMemoryBackend, LeaderElectionOptions, LeaseMode, LockStatus};
use leader_rig::{Fault, FaultyBackend};

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::from_millis(50))
}

#[test]
fn a_held_lock_is_a_not_acquired_error_naming_the_holder() {
    let backend = InMemoryBackend::new();
    let a = LeaderElector::new(backend.clone(), options("a")).unwrap();
    let b = LeaderElector::new(backend, options("b")).unwrap();
    let guard = a
        .acquire("bill-run:2026-11", LeaseMode::watchdog())
        .unwrap();
    match b.acquire("bill-run:2026-11", LeaseMode::watchdog()) {
        Err(Error::NotAcquired { key, holder }) => {
            assert_eq!(key, "bill-run:2026-11");
            let holder = holder.expect("holder reported");
            assert_eq!(holder.leader_id, "a");
            assert_eq!(holder.fencing_token, guard.fencing_token());
        }
        other => panic!("expected NotAcquired, got {other:?}"),
    }
    let err = b
        .with_lock(
            "bill-run:2026-11",
            LeaseMode::watchdog(),
            |_| unreachable!(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("held by `a`"), "{err}");
    drop(guard);
    assert_eq!(
        b.with_lock("bill-run:2026-11", LeaseMode::watchdog(), |g| g
            .fencing_token())
            .unwrap(),
        2
    );
}

#[test]
fn the_watchdog_keeps_a_guard_alive_past_several_timeouts() {
    let backend = InMemoryBackend::new();
    let a = LeaderElector::new(backend.clone(), options("a")).unwrap();
    let b = LeaderElector::new(backend, options("b")).unwrap();
    let mode = LeaseMode::Watchdog {
        timeout: Duration::from_millis(120),
    };
    let guard = a.acquire("job", mode).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert!(!guard.is_lost());
    assert!(matches!(
        b.acquire("job", mode),
        Err(Error::NotAcquired { .. })
    ));
    guard.release().unwrap();
    assert_eq!(b.state("job").unwrap().status(), LockStatus::Empty);
}

#[test]
fn a_fixed_lease_expires_while_held_and_the_guard_reports_it() {
    let backend = InMemoryBackend::new();
    let a = LeaderElector::new(backend.clone(), options("a")).unwrap();
    let b = LeaderElector::new(backend, options("b")).unwrap();
    let guard = a
        .acquire("job", LeaseMode::Fixed(Duration::from_millis(80)))
        .unwrap();
    assert!(!guard.is_lost());
    assert!(guard.context().wait_lost_timeout(Duration::from_secs(2)));
    assert!(guard.is_lost());
    let next = b.acquire("job", LeaseMode::watchdog()).unwrap();
    assert!(next.fencing_token() > guard.fencing_token());
    drop(guard); // a stale release must not free b's lock
    assert_eq!(b.state("job").unwrap().leader().unwrap().leader_id, "b");
}

#[test]
fn backend_down_is_a_backend_error_and_the_section_never_runs() {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    backend.set_all(Fault::Fail);
    let a = LeaderElector::new(backend, options("a")).unwrap();
    let err = a
        .with_lock("bill", LeaseMode::watchdog(), |_| {
            unreachable!("must not run")
        })
        .unwrap_err();
    assert!(
        matches!(&err, Error::Backend(e) if e.key() == "bill"),
        "{err}"
    );
    assert!(matches!(
        a.acquire("bill", LeaseMode::Fixed(Duration::ZERO)),
        Err(Error::InvalidOptions(_))
    ));
}
