//! Reentrant holds, async: by handle (`reenter`) and by holder key
//! (`AsyncReentrantLocks`), each body run on tokio (both flavours), async-std and smol.

use std::time::{Duration, Instant};

use futures_lite::FutureExt;
use leader_async::{AsyncLeaderElector, AsyncReentrantLocks};
use leader_core::{
    Error, Hold, InMemoryBackend, LeaderElectionOptions, LeaseMode, LockBackend, LockName,
    LockStatus,
};
use leader_testkit::{Runner, eventually, sleep, within};

leader_testkit::on_every_runtime!(
    the_same_holder_reenters_with_the_same_token_and_its_last_hold_releases,
    another_holder_waits_here_then_takes_the_lock,
    another_holders_wait_runs_out_as_not_acquired_naming_the_holder,
    nesting_beyond_the_limit_is_a_typed_error,
    a_hold_ends_in_another_task_and_a_dropped_last_hold_releases_in_the_background,
    a_dropped_acquire_leaves_nothing_behind,
    a_guard_is_reentered_by_handle,
);

fn options(node: &str, wait: Duration) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(wait)
        .with_lease_time(Duration::from_secs(30))
}

fn elector(
    backend: &InMemoryBackend,
    node: &str,
    wait: Duration,
) -> AsyncLeaderElector<InMemoryBackend> {
    AsyncLeaderElector::new(backend.clone(), options(node, wait)).unwrap()
}

fn the_same_holder_reenters_with_the_same_token_and_its_last_hold_releases<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let locks = AsyncReentrantLocks::new(&elector(&backend, "a", Duration::ZERO));
    let other = elector(&backend, "b", Duration::ZERO);
    runner.block_on(async {
        let outer = locks
            .acquire("ledger", "request-42", LeaseMode::watchdog())
            .await
            .unwrap();
        let inner = locks
            .acquire("ledger", "request-42", LeaseMode::watchdog())
            .await
            .unwrap();
        assert_eq!(inner.fencing_token(), outer.fencing_token());
        assert_eq!(outer.holds(), 2);
        inner.release().await;
        assert_eq!(outer.holds(), 1);
        assert_eq!(
            other.state("ledger").await.unwrap().status(),
            LockStatus::Occupied
        );
        outer.release().await;
        assert_eq!(locks.holds("ledger").unwrap(), 0);
        assert_eq!(
            other.state("ledger").await.unwrap().status(),
            LockStatus::Empty
        );
    });
}

fn another_holder_waits_here_then_takes_the_lock<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let locks = AsyncReentrantLocks::new(&elector(&backend, "a", Duration::from_secs(30)));
    let (first, second) = (locks.clone(), locks);
    let outcomes = runner.race(vec![
        async move {
            let guard = first
                .acquire("ledger", "request-1", LeaseMode::watchdog())
                .await
                .unwrap();
            sleep(Duration::from_millis(150)).await;
            let (token, released) = (guard.fencing_token(), Instant::now());
            guard.release().await;
            (token, released)
        }
        .boxed(),
        async move {
            sleep(Duration::from_millis(30)).await;
            let guard = second
                .acquire("ledger", "request-2", LeaseMode::watchdog())
                .await
                .unwrap();
            let acquired = Instant::now();
            let token = guard.fencing_token();
            guard.release().await;
            (token, acquired)
        }
        .boxed(),
    ]);
    let ((first_token, released), (second_token, acquired)) = (outcomes[0], outcomes[1]);
    assert!(
        acquired >= released,
        "the second holder got in only after the release"
    );
    assert!(second_token > first_token);
}

fn another_holders_wait_runs_out_as_not_acquired_naming_the_holder<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let locks = AsyncReentrantLocks::new(&elector(&backend, "a", Duration::from_millis(50)));
    runner.block_on(async {
        let first = locks
            .acquire("ledger", "request-1", LeaseMode::watchdog())
            .await
            .unwrap();
        match locks
            .acquire("ledger", "request-2", LeaseMode::watchdog())
            .await
        {
            Err(Error::NotAcquired { key, holder }) => {
                assert_eq!(key, "ledger");
                let holder = holder.expect("the holder here is named");
                assert_eq!(
                    (holder.leader_id.as_str(), holder.fencing_token),
                    ("a", first.fencing_token())
                );
            }
            other => panic!("expected NotAcquired, got {other:?}"),
        }
        first.release().await;
    });
}

fn nesting_beyond_the_limit_is_a_typed_error<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let locks = AsyncReentrantLocks::new(&elector(&backend, "a", Duration::ZERO)).with_limit(2);
    runner.block_on(async {
        let outer = locks
            .acquire("ledger", "job-7", LeaseMode::watchdog())
            .await
            .unwrap();
        let inner = locks
            .acquire("ledger", "job-7", LeaseMode::watchdog())
            .await
            .unwrap();
        match locks
            .acquire("ledger", "job-7", LeaseMode::watchdog())
            .await
        {
            Err(Error::ReentrancyLimit { key, limit }) => {
                assert_eq!((key.as_str(), limit), ("ledger", 2))
            }
            other => panic!("expected ReentrancyLimit, got {other:?}"),
        }
        assert_eq!(outer.holds(), 2);
        assert!(matches!(
            locks.acquire("", "job-7", LeaseMode::watchdog()).await,
            Err(Error::InvalidName(_))
        ));
        inner.release().await;
        outer.release().await;
    });
}

fn a_hold_ends_in_another_task_and_a_dropped_last_hold_releases_in_the_background<R: Runner>(
    runner: &R,
) {
    let backend = InMemoryBackend::new();
    let locks = AsyncReentrantLocks::new(&elector(&backend, "a", Duration::ZERO));
    let other = elector(&backend, "b", Duration::ZERO);
    let (outer, inner) = runner.block_on(async {
        let outer = locks
            .acquire("ledger", "job-7", LeaseMode::watchdog())
            .await
            .unwrap();
        let inner = locks
            .acquire("ledger", "job-7", LeaseMode::watchdog())
            .await
            .unwrap();
        (outer, inner)
    });
    // The outer hold ends first, in another task; the inner one still holds the lock.
    runner.race(vec![async move { outer.release().await }.boxed()]);
    assert_eq!(inner.holds(), 1);
    drop(inner);
    runner.block_on(async {
        eventually(
            "the lock released in the background",
            Duration::from_secs(10),
            || {
                let key = LockName::new("ledger").unwrap();
                LockBackend::state(&backend, &key).unwrap().status() == LockStatus::Empty
            },
        )
        .await;
        assert_eq!(
            other.state("ledger").await.unwrap().status(),
            LockStatus::Empty
        );
    });
}

fn a_dropped_acquire_leaves_nothing_behind<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let locks = AsyncReentrantLocks::new(&elector(&backend, "a", Duration::from_secs(30)));
    let other = elector(&backend, "b", Duration::ZERO);
    runner.block_on(async {
        // Another node holds it: request-1's acquisition waits at the store, and is dropped.
        let held = other
            .acquire("ledger", LeaseMode::watchdog())
            .await
            .unwrap();
        let dropped = within(
            Duration::from_millis(100),
            locks.acquire("ledger", "request-1", LeaseMode::watchdog()),
        )
        .await;
        assert!(dropped.is_none());
        held.release().await;
        // Nothing is left "acquiring": request-2 goes straight to the store.
        let started = Instant::now();
        let guard = locks
            .acquire("ledger", "request-2", LeaseMode::watchdog())
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "it did not wait out its wait time"
        );
        guard.release().await;
    });
}

fn a_guard_is_reentered_by_handle<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let elector = elector(&backend, "a", Duration::ZERO);
    runner.block_on(async {
        let guard = elector
            .acquire("ledger", LeaseMode::watchdog())
            .await
            .unwrap();
        let nested = guard.reenter();
        let deeper = nested.reenter();
        assert_eq!(
            (deeper.fencing_token(), deeper.depth()),
            (guard.fencing_token(), 2)
        );
        assert!(!deeper.is_lost());
        guard.release().await;
    });
}
