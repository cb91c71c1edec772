//! `AsyncLeaderElector` semantics (the README's "Semantics in brief"), each body written once and run on tokio
//! (current-thread and multi-thread), async-std and smol.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_lite::FutureExt;
use leader_async::AsyncLeaderElector;
use leader_core::{
    AsyncLockBackend, Error, InMemoryBackend, LeaderElectionOptions, LeaderRunResult, LockStatus,
    NameError,
};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_testkit::{Runner, sleep, within};

leader_testkit::on_every_runtime!(
    the_winner_runs_and_a_contender_skips,
    an_action_error_is_action_failed_and_releases,
    a_panic_releases_then_propagates,
    backend_trouble_is_an_error_and_the_action_does_not_run,
    a_waiter_takes_over_when_the_holder_releases,
    auto_extend_keeps_the_lock_past_its_lease,
    a_failed_renewal_resolves_the_lost_signal,
    without_auto_extend_the_lost_signal_fires_at_the_deadline,
    a_dropped_future_releases_the_lease_promptly,
    fifty_waiting_tasks_each_run_once_one_at_a_time,
    snapshots_and_prefixes,
);

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

fn the_winner_runs_and_a_contender_skips<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let a = elector(backend.clone(), options("a"));
    let b = elector(backend, options("b"));
    runner.block_on(async {
        let outcome = a
            .run_if_leader_result("job", || async {
                assert_eq!(
                    b.run_if_leader("job", || async { unreachable!() })
                        .await
                        .unwrap(),
                    None
                );
                Ok::<_, String>(7)
            })
            .await
            .unwrap();
        assert!(
            matches!(
                &outcome,
                LeaderRunResult::Elected { value: 7, leader_id, fencing_token: 1, lease_lost: false, .. }
                    if leader_id == "a"
            ),
            "{outcome:?}"
        );
        assert_eq!(b.state("job").await.unwrap().status(), LockStatus::Empty);
    });
}

fn an_action_error_is_action_failed_and_releases<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let a = elector(backend.clone(), options("a"));
    let b = elector(backend, options("b"));
    runner.block_on(async {
        let outcome = a
            .run_if_leader_result("job", || async { Err::<(), _>("boom") })
            .await
            .unwrap();
        assert_eq!(outcome, LeaderRunResult::ActionFailed("boom"));
        assert_eq!(
            b.run_if_leader("job", || async { 1 }).await.unwrap(),
            Some(1)
        );
    });
}

fn a_panic_releases_then_propagates<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let a = elector(backend.clone(), options("a"));
    let caught = runner.block_on(
        AssertUnwindSafe(a.run_if_leader("job", || async { panic!("action failed hard") }))
            .catch_unwind(),
    );
    assert!(caught.is_err(), "the panic continues");
    let state = runner.block_on(a.state("job")).unwrap();
    assert_eq!(
        state.status(),
        LockStatus::Empty,
        "released before the panic went on"
    );
}

fn backend_trouble_is_an_error_and_the_action_does_not_run<R: Runner>(runner: &R) {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    backend.set_all(Fault::Fail);
    let a = elector(backend, options("a"));
    runner.block_on(async {
        let err = a
            .run_if_leader("job", || async { unreachable!("must not run") })
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Backend(e) if e.key() == "job"),
            "{err}"
        );
        assert!(a.state("job").await.is_err());
    });
}

fn a_waiter_takes_over_when_the_holder_releases<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let holder = elector(backend.clone(), options("holder"));
    let waiter = elector(
        backend,
        options("waiter").with_wait_time(Duration::from_secs(10)),
    );
    let outcomes = runner.race(vec![
        async move {
            holder
                .run_if_leader("job", || sleep(Duration::from_millis(150)))
                .await
                .unwrap();
            Duration::ZERO
        }
        .boxed(),
        async move {
            sleep(Duration::from_millis(30)).await;
            let t = Instant::now();
            assert_eq!(
                waiter.run_if_leader("job", || async {}).await.unwrap(),
                Some(())
            );
            t.elapsed()
        }
        .boxed(),
    ]);
    assert!(
        outcomes[1] < Duration::from_secs(5),
        "woke on the release: {:?}",
        outcomes[1]
    );
}

fn auto_extend_keeps_the_lock_past_its_lease<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let opts = |n| {
        options(n)
            .with_lease_time(Duration::from_millis(150))
            .with_auto_extend(true)
    };
    let a = elector(backend.clone(), opts("a"));
    let b = elector(backend, opts("b"));
    runner.block_on(async {
        let outcome = a
            .run_if_leader_with("job", |lease| async move {
                sleep(Duration::from_millis(500)).await;
                assert!(!lease.is_lost());
                assert_eq!(b.run_if_leader("job", || async {}).await.unwrap(), None);
                Ok::<_, ()>(())
            })
            .await
            .unwrap();
        assert!(outcome.is_elected());
    });
}

fn a_failed_renewal_resolves_the_lost_signal<R: Runner>(runner: &R) {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let extend_down = backend.clone();
    let a = elector(
        backend,
        options("a")
            .with_lease_time(Duration::from_millis(300))
            .with_auto_extend(true),
    );
    runner.block_on(async {
        let outcome = a
            .run_if_leader_with("job", |lease| async move {
                extend_down.set(Op::Extend, Fault::Fail);
                let lost = within(Duration::from_millis(250), lease.lost()).await;
                assert!(lost.is_some(), "lost at the first failed renewal (lease/3)");
                assert!(lease.is_lost());
                Ok::<_, ()>(())
            })
            .await
            .unwrap();
        assert!(outcome.is_elected());
    });
}

fn without_auto_extend_the_lost_signal_fires_at_the_deadline<R: Runner>(runner: &R) {
    let a = elector(
        InMemoryBackend::new(),
        options("a").with_lease_time(Duration::from_millis(60)),
    );
    runner.block_on(async {
        let outcome = a
            .run_if_leader_with("job", |lease| async move {
                let t = Instant::now();
                lease.lost().await;
                assert!(t.elapsed() >= Duration::from_millis(40));
                assert!(matches!(lease.check(), Err(Error::LeaseLost { .. })));
                Ok::<_, ()>(())
            })
            .await
            .unwrap();
        assert!(outcome.is_elected());
    });
}

fn a_dropped_future_releases_the_lease_promptly<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let a = elector(
        backend.clone(),
        options("a")
            .with_lease_time(Duration::from_secs(60))
            .with_auto_extend(true),
    );
    let b = elector(backend, options("b").with_wait_time(Duration::from_secs(5)));
    runner.block_on(async {
        let started = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&started);
        let cancelled = within(
            Duration::from_millis(50),
            a.run_if_leader("job", || async move {
                flag.store(true, Ordering::SeqCst);
                std::future::pending::<()>().await
            }),
        )
        .await;
        assert!(cancelled.is_none() && started.load(Ordering::SeqCst));
        let t = Instant::now();
        assert_eq!(b.run_if_leader("job", || async {}).await.unwrap(), Some(()));
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "not after the 60 s lease: {:?}",
            t.elapsed()
        );
    });
}

fn fifty_waiting_tasks_each_run_once_one_at_a_time<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let running = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let tasks = (0..50)
        .map(|i| {
            let elector = elector(
                backend.clone(),
                options(&format!("n{i}")).with_wait_time(Duration::from_secs(60)),
            );
            let (running, tokens) = (Arc::clone(&running), Arc::clone(&tokens));
            async move {
                elector
                    .run_if_leader_with("serial", |lease| async move {
                        assert_eq!(
                            running.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two leaders at once"
                        );
                        tokens.lock().unwrap().push(lease.fencing_token());
                        sleep(Duration::from_millis(1)).await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok::<_, ()>(())
                    })
                    .await
                    .unwrap()
                    .is_elected()
            }
        })
        .collect();
    let elected = runner.race(tasks);
    assert!(elected.iter().all(|e| *e), "every task ran exactly once");
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), 50);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

fn snapshots_and_prefixes<R: Runner>(runner: &R) {
    let plain = elector(InMemoryBackend::new(), options("a"));
    let scoped = plain.with_name_prefix("billing:").unwrap();
    assert!(matches!(
        plain.with_name_prefix("tenant:acme:"),
        Err(Error::InvalidName(NameError::Reserved { .. }))
    ));
    runner.block_on(async {
        assert!(matches!(
            plain.run_if_leader("tenant:acme:sync", || async {}).await,
            Err(Error::InvalidName(NameError::Reserved { .. }))
        ));
        scoped
            .run_if_leader("sync", || async {
                assert_eq!(
                    plain.state("billing:sync").await.unwrap().status(),
                    LockStatus::Occupied
                );
                let state = scoped.state("sync").await.unwrap();
                assert_eq!(state.lock_name(), "sync");
                assert_eq!(state.leader().unwrap().leader_id, "a");
            })
            .await
            .unwrap();
        assert!(matches!(
            plain.run_if_leader("", || async {}).await,
            Err(Error::InvalidName(_))
        ));
    });
}

#[test]
fn the_elector_and_its_futures_are_send_and_sync() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: T) {}
    let a = elector(InMemoryBackend::new(), options("a"));
    send_sync(&a);
    send(a.run_if_leader("job", || async { 1 }));
    send(a.run_if_leader_with(
        "job",
        |lease| async move { Ok::<_, ()>(lease.fencing_token()) },
    ));
    send(a.state("job"));
}
