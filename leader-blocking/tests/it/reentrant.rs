//! Reentrant holds: by handle (`reenter`) and by holder key (`ReentrantLocks`).

use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use leader_blocking::{LeaderElector, ReentrantLocks};
use leader_core::{Error, Hold, InMemoryBackend, LeaderElectionOptions, LeaseMode, LockStatus};
use leader_rig::{Call, CountingBackend};

fn options(node: &str, wait: Duration) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(wait)
}

fn counted(
    wait: Duration,
) -> (
    ReentrantLocks<CountingBackend<InMemoryBackend>>,
    Arc<CountingBackend<InMemoryBackend>>,
) {
    let backend = Arc::new(CountingBackend::new(InMemoryBackend::new()));
    let elector =
        LeaderElector::with_shared_backend(Arc::clone(&backend), options("a", wait)).unwrap();
    (ReentrantLocks::new(&elector), backend)
}

#[test]
fn the_same_holder_reenters_without_a_store_call_and_its_last_hold_releases() {
    let (locks, backend) = counted(Duration::ZERO);
    let counter = backend.counter();
    let outer = locks
        .acquire("ledger", "request-42", LeaseMode::watchdog())
        .unwrap();
    let inner = locks
        .acquire("ledger", "request-42", LeaseMode::watchdog())
        .unwrap();
    assert_eq!(
        counter.calls(Call::TryAcquireSlot),
        1,
        "a nested hold costs no store call"
    );
    assert_eq!(inner.fencing_token(), outer.fencing_token());
    assert_eq!((outer.holds(), locks.holds("ledger").unwrap()), (2, 2));

    // The inner hold ends: the lock stays held, for every node.
    drop(inner);
    assert_eq!(outer.holds(), 1);
    let other =
        LeaderElector::with_shared_backend(Arc::clone(&backend), options("b", Duration::ZERO))
            .unwrap();
    assert_eq!(
        other.state("ledger").unwrap().status(),
        LockStatus::Occupied
    );
    assert!(other.acquire("ledger", LeaseMode::watchdog()).is_err());

    outer.release().unwrap();
    assert_eq!(locks.holds("ledger").unwrap(), 0);
    assert_eq!(other.state("ledger").unwrap().status(), LockStatus::Empty);
    assert_eq!(
        counter.calls(Call::Release),
        1,
        "released once, by the last hold"
    );
}

#[test]
fn holds_end_in_any_order_and_on_any_thread() {
    let (locks, backend) = counted(Duration::ZERO);
    let outer = locks
        .acquire("ledger", "job-7", LeaseMode::watchdog())
        .unwrap();
    let inner = locks
        .acquire("ledger", "job-7", LeaseMode::watchdog())
        .unwrap();
    // The outer hold ends first: the inner one still holds the lock.
    drop(outer);
    assert_eq!(inner.holds(), 1);
    assert!(!inner.is_lost());
    // The last hold ends on another thread.
    thread::spawn(move || inner.release().unwrap())
        .join()
        .unwrap();
    let other = LeaderElector::with_shared_backend(backend, options("b", Duration::ZERO)).unwrap();
    assert_eq!(other.state("ledger").unwrap().status(), LockStatus::Empty);
}

#[test]
fn a_nested_hold_never_changes_the_lease() {
    let (locks, _) = counted(Duration::ZERO);
    let outer = locks
        .acquire(
            "ledger",
            "request-1",
            LeaseMode::Fixed(Duration::from_secs(60)),
        )
        .unwrap();
    // A nested hold that asks for a far shorter lease gets the lease as it is.
    let inner = locks
        .acquire(
            "ledger",
            "request-1",
            LeaseMode::Fixed(Duration::from_millis(1)),
        )
        .unwrap();
    assert_eq!(inner.context().deadline(), outer.context().deadline());
    assert!(!inner.context().wait_lost_timeout(Duration::from_millis(20)));
}

#[test]
fn another_holder_waits_here_without_store_calls_then_takes_the_lock() {
    let (locks, backend) = counted(Duration::from_secs(30));
    let counter = backend.counter();
    let first = locks
        .acquire("ledger", "request-1", LeaseMode::watchdog())
        .unwrap();
    let first_token = first.fencing_token();
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let locks = locks.clone();
        thread::spawn(move || {
            let guard = locks
                .acquire("ledger", "request-2", LeaseMode::watchdog())
                .unwrap();
            tx.send(guard.fencing_token()).unwrap();
            guard.release().unwrap();
        })
    };
    // It waits for the first holder, whatever the time it is given.
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    assert_eq!(
        counter.calls(Call::TryAcquireSlot),
        1,
        "in-process waits cost no store call"
    );
    first.release().unwrap();
    let token = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    waiter.join().unwrap();
    assert!(token > first_token);
    assert_eq!(counter.calls(Call::TryAcquireSlot), 2);
}

#[test]
fn another_holders_wait_runs_out_as_not_acquired_naming_the_holder() {
    let (locks, _) = counted(Duration::from_millis(50));
    let first = locks
        .acquire("ledger", "request-1", LeaseMode::watchdog())
        .unwrap();
    match locks.acquire("ledger", "request-2", LeaseMode::watchdog()) {
        Err(Error::NotAcquired { key, holder }) => {
            assert_eq!(key, "ledger");
            let holder = holder.expect("the holder here is named");
            assert_eq!(holder.leader_id, "a");
            assert_eq!(holder.fencing_token, first.fencing_token());
        }
        other => panic!("expected NotAcquired, got {other:?}"),
    }
    assert_eq!(first.holds(), 1);
}

#[test]
fn nesting_beyond_the_limit_is_a_typed_error_that_changes_nothing() {
    let (locks, backend) = counted(Duration::ZERO);
    let locks = locks.with_limit(2);
    let outer = locks
        .acquire("ledger", "request-1", LeaseMode::watchdog())
        .unwrap();
    let inner = locks
        .acquire("ledger", "request-1", LeaseMode::watchdog())
        .unwrap();
    match locks.acquire("ledger", "request-1", LeaseMode::watchdog()) {
        Err(Error::ReentrancyLimit { key, limit }) => {
            assert_eq!((key.as_str(), limit), ("ledger", 2));
        }
        other => panic!("expected ReentrancyLimit, got {other:?}"),
    }
    assert_eq!(outer.holds(), 2);
    drop(inner);
    drop(outer);
    assert_eq!(backend.counter().calls(Call::Release), 1);
    // Bad input is a typed error too, and changes nothing.
    assert!(matches!(
        locks.acquire("", "request-1", LeaseMode::watchdog()),
        Err(Error::InvalidName(_))
    ));
    assert!(matches!(
        locks.acquire("ledger", "request-1", LeaseMode::Fixed(Duration::ZERO)),
        Err(Error::InvalidOptions(_))
    ));
    assert_eq!(locks.holds("ledger").unwrap(), 0);
}

#[test]
fn a_lost_lease_is_lost_for_every_hold_and_the_last_hold_still_ends_it() {
    let (locks, _) = counted(Duration::ZERO);
    let outer = locks
        .acquire(
            "ledger",
            "request-1",
            LeaseMode::Fixed(Duration::from_millis(50)),
        )
        .unwrap();
    let inner = locks
        .acquire("ledger", "request-1", LeaseMode::watchdog())
        .unwrap();
    assert!(inner.context().wait_lost_timeout(Duration::from_secs(30)));
    assert!(outer.is_lost() && inner.is_lost());
    // No new hold on a lease that is over; the holds there are stay as they were.
    assert!(matches!(
        locks.acquire("ledger", "request-1", LeaseMode::watchdog()),
        Err(Error::LeaseLost { .. })
    ));
    assert_eq!(outer.holds(), 2);
    drop(outer);
    drop(inner);
    assert_eq!(locks.holds("ledger").unwrap(), 0);
    // Taken afresh, with a new token.
    let again = locks
        .acquire("ledger", "request-1", LeaseMode::watchdog())
        .unwrap();
    assert!(!again.is_lost());
}

#[test]
fn a_guard_is_reentered_by_handle_with_the_same_token_and_no_store_call() {
    let backend = Arc::new(CountingBackend::new(InMemoryBackend::new()));
    let elector =
        LeaderElector::with_shared_backend(Arc::clone(&backend), options("a", Duration::ZERO))
            .unwrap();
    let guard = elector.acquire("ledger", LeaseMode::watchdog()).unwrap();
    fn nested(hold: &impl Hold) -> (u64, u32) {
        let deeper = hold.reenter();
        (deeper.fencing_token(), deeper.depth())
    }
    assert_eq!(nested(&guard.reenter()), (guard.fencing_token(), 2));
    assert_eq!(nested(&guard), (guard.fencing_token(), 1));
    assert_eq!(backend.counter().calls(Call::TryAcquireSlot), 1);
    // A campaign's term (a lease context) is a hold too.
    assert_eq!(nested(guard.context()).0, guard.fencing_token());
}
