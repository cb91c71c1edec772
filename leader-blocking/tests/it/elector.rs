//! `LeaderElector` semantics on the in-memory backend (the README's "Semantics in brief").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use leader_blocking::LeaderElector;
use leader_core::{
    Error, InMemoryBackend, LeaderElectionOptions, LeaderRunResult, LockStatus, NameError,
    OptionsError,
};
use leader_rig::{Fault, FaultyBackend, Op};

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(30))
}

fn pair(
    backend: &InMemoryBackend,
) -> (
    LeaderElector<InMemoryBackend>,
    LeaderElector<InMemoryBackend>,
) {
    (
        LeaderElector::new(backend.clone(), options("node-a")).unwrap(),
        LeaderElector::new(backend.clone(), options("node-b")).unwrap(),
    )
}

#[test]
fn the_winner_runs_and_a_contender_skips() {
    let backend = InMemoryBackend::new();
    let (a, b) = pair(&backend);
    let outcome = a
        .run_if_leader_result("job", || {
            let inner = b
                .run_if_leader("job", || unreachable!("b must skip"))
                .unwrap();
            assert_eq!(inner, None);
            Ok::<_, String>("ran")
        })
        .unwrap();
    assert!(
        matches!(
            &outcome,
            LeaderRunResult::Elected { value: "ran", leader_id, fencing_token: 1, lease_lost: false, .. }
                if leader_id == "node-a"
        ),
        "{outcome:?}"
    );
    assert_eq!(
        a.state("job").unwrap().status(),
        LockStatus::Empty,
        "released after the action"
    );
}

#[test]
fn an_action_error_is_action_failed_and_releases() {
    let backend = InMemoryBackend::new();
    let (a, b) = pair(&backend);
    let outcome = a
        .run_if_leader_result("job", || Err::<(), _>("boom"))
        .unwrap();
    assert_eq!(outcome, LeaderRunResult::ActionFailed("boom"));
    assert_eq!(b.run_if_leader("job", || 1).unwrap(), Some(1));
}

#[test]
fn a_panicking_action_releases_and_the_panic_continues() {
    let backend = InMemoryBackend::new();
    let (a, b) = pair(&backend);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.run_if_leader("job", || panic!("action failed hard"))
            .unwrap()
    }));
    assert!(panicked.is_err());
    assert_eq!(b.state("job").unwrap().status(), LockStatus::Empty);
    assert_eq!(b.run_if_leader("job", || 2).unwrap(), Some(2));
}

#[test]
fn backend_trouble_is_an_error_and_the_action_does_not_run() {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    backend.set_all(Fault::Fail);
    let elector = LeaderElector::new(backend, options("n")).unwrap();
    let err = elector
        .run_if_leader("job", || unreachable!("must not run"))
        .unwrap_err();
    assert!(
        matches!(&err, Error::Backend(e) if e.key() == "job" && e.backend() == "faulty"),
        "{err}"
    );
    assert!(err.is_transient());
    assert!(elector.state("job").is_err());
}

#[test]
fn a_waiter_takes_over_as_soon_as_the_holder_releases() {
    let backend = InMemoryBackend::new();
    let holder = LeaderElector::new(backend.clone(), options("holder")).unwrap();
    let waiter = LeaderElector::new(
        backend.clone(),
        options("waiter").with_wait_time(Duration::from_secs(10)),
    )
    .unwrap();
    let started = Barrier::new(2);
    let waited = std::thread::scope(|s| {
        let waiting = s.spawn(|| {
            started.wait();
            let t = Instant::now();
            let ran = waiter.run_if_leader("job", || ()).unwrap();
            (ran, t.elapsed())
        });
        holder
            .run_if_leader("job", || {
                started.wait();
                std::thread::sleep(Duration::from_millis(200));
            })
            .unwrap();
        waiting.join().unwrap()
    });
    assert_eq!(waited.0, Some(()));
    assert!(
        waited.1 < Duration::from_secs(5),
        "woke on the release, not the wait deadline: {:?}",
        waited.1
    );
}

#[test]
fn a_waiter_gives_up_after_wait_time() {
    let backend = InMemoryBackend::new();
    let (a, _) = pair(&backend);
    let waiter = LeaderElector::new(
        backend,
        options("w").with_wait_time(Duration::from_millis(100)),
    )
    .unwrap();
    a.run_if_leader("job", || {
        let t = Instant::now();
        assert_eq!(waiter.run_if_leader("job", || ()).unwrap(), None);
        assert!(t.elapsed() >= Duration::from_millis(100));
    })
    .unwrap();
}

#[test]
fn auto_extend_keeps_the_lock_past_its_lease() {
    let backend = InMemoryBackend::new();
    let opts = |n| {
        options(n)
            .with_lease_time(Duration::from_millis(150))
            .with_auto_extend(true)
    };
    let a = LeaderElector::new(backend.clone(), opts("a")).unwrap();
    let b = LeaderElector::new(backend, opts("b")).unwrap();
    let outcome = a.run_if_leader_with("job", |ctx| {
        std::thread::sleep(Duration::from_millis(500));
        assert!(!ctx.is_lost(), "renewed every lease/3");
        assert_eq!(b.run_if_leader("job", || ()).unwrap(), None);
        Ok::<_, ()>(())
    });
    assert!(outcome.unwrap().is_elected());
}

#[test]
fn without_auto_extend_the_context_reports_the_lease_running_out() {
    let backend = InMemoryBackend::new();
    let a = LeaderElector::new(
        backend,
        options("a").with_lease_time(Duration::from_millis(50)),
    )
    .unwrap();
    let outcome = a.run_if_leader_with("job", |ctx| {
        assert!(!ctx.is_lost());
        std::thread::sleep(Duration::from_millis(80));
        assert!(ctx.is_lost());
        assert!(matches!(ctx.check(), Err(Error::LeaseLost { .. })));
        Ok::<_, ()>(())
    });
    assert!(outcome.unwrap().is_elected());
}

#[test]
fn a_failed_renewal_shows_in_the_context_at_once() {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let extend_down = backend.clone();
    let a = LeaderElector::new(
        backend,
        options("a")
            .with_lease_time(Duration::from_millis(300))
            .with_auto_extend(true),
    )
    .unwrap();
    let outcome = a.run_if_leader_with("job", |ctx| {
        extend_down.set(Op::Extend, Fault::Fail);
        assert!(
            ctx.wait_lost_timeout(Duration::from_millis(250)),
            "lost at the first failed renewal (lease/3)"
        );
        Ok::<_, ()>(())
    });
    assert!(outcome.unwrap().is_elected());
}

#[test]
fn min_lease_keeps_the_lock_after_a_fast_action() {
    let backend = InMemoryBackend::new();
    let a = LeaderElector::new(
        backend.clone(),
        options("a").with_min_lease_time(Duration::from_secs(10)),
    )
    .unwrap();
    let b = LeaderElector::new(backend, options("b")).unwrap();
    let t = Instant::now();
    assert_eq!(a.run_if_leader("daily", || ()).unwrap(), Some(()));
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "the caller is not parked"
    );
    assert_eq!(b.run_if_leader("daily", || ()).unwrap(), None);
    let leader = b.state("daily").unwrap().leader().cloned().unwrap();
    assert_eq!(leader.leader_id, "a");
}

#[test]
fn contenders_with_wait_time_run_one_at_a_time_with_growing_tokens() {
    let backend = InMemoryBackend::new();
    let running = AtomicUsize::new(0);
    let tokens = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for i in 0..16 {
            let elector = LeaderElector::new(
                backend.clone(),
                options(&format!("n{i}")).with_wait_time(Duration::from_secs(30)),
            )
            .unwrap();
            let (running, tokens) = (&running, &tokens);
            s.spawn(move || {
                let outcome = elector
                    .run_if_leader_with("serial", |ctx| {
                        assert_eq!(
                            running.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two leaders at once"
                        );
                        tokens.lock().unwrap().push(ctx.fencing_token());
                        std::thread::sleep(Duration::from_millis(2));
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok::<_, ()>(())
                    })
                    .unwrap();
                assert!(outcome.is_elected());
            });
        }
    });
    let tokens = tokens.into_inner().unwrap();
    assert_eq!(tokens.len(), 16);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[test]
fn bad_input_gets_typed_errors() {
    let backend = InMemoryBackend::new();
    let err = LeaderElector::new(
        backend.clone(),
        options("a").with_lease_time(Duration::ZERO),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOptions(OptionsError::LeaseTooShort(_))
    ));
    let err = LeaderElector::new(backend.clone(), options("")).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOptions(OptionsError::EmptyNodeId)
    ));
    let elector = LeaderElector::new(backend, options("a")).unwrap();
    for (name, expected) in [
        ("", NameError::Empty),
        (
            "a\u{0}",
            NameError::ControlCharacter {
                ch: '\u{0}',
                index: 1,
            },
        ),
        ("{x}", NameError::Brace { ch: '{', index: 0 }),
        // '#' begins derived names only ("job#1" is slot 1 of "job", which `state` takes).
        ("job#x", NameError::Hash { index: 3 }),
    ] {
        let err = elector.run_if_leader(name, || unreachable!()).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidName(e) if *e == expected),
            "{name:?}: {err}"
        );
        assert!(elector.state(name).is_err());
    }
    let err = elector.run_if_leader(&"x".repeat(256), || ()).unwrap_err();
    assert!(err.to_string().contains("256 bytes"), "{err}");
}

#[test]
fn a_name_prefix_is_applied_to_the_key_and_hidden_in_snapshots() {
    let backend = InMemoryBackend::new();
    let plain = LeaderElector::new(backend, options("a")).unwrap();
    let scoped = plain.with_name_prefix("billing:").unwrap();
    for reserved in ["tenant:", "tenant:acme:"] {
        assert!(matches!(
            plain.with_name_prefix(reserved),
            Err(Error::InvalidName(NameError::Reserved { .. }))
        ));
    }
    assert!(matches!(
        plain.run_if_leader("tenant:acme:sync", || ()),
        Err(Error::InvalidName(NameError::Reserved { .. }))
    ));
    scoped
        .run_if_leader("sync", || {
            assert_eq!(
                plain.state("billing:sync").unwrap().status(),
                LockStatus::Occupied
            );
            let state = scoped.state("sync").unwrap();
            assert_eq!(state.lock_name(), "sync");
            assert_eq!(state.status(), LockStatus::Occupied);
            assert_eq!(plain.state("sync").unwrap().status(), LockStatus::Empty);
        })
        .unwrap();
}
