//! `ThreadPoolLeaderElector`: tasks on workers, handles to wait on or await.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use leader_blocking::{LeaderElector, ThreadPoolLeaderElector};
use leader_core::{Error, InMemoryBackend, LeaderElectionOptions, LeaderRunResult, LockStatus};
use leader_rig::{Fault, FaultyBackend};

fn pool(backend: &InMemoryBackend, workers: usize) -> ThreadPoolLeaderElector<InMemoryBackend> {
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    ThreadPoolLeaderElector::new(backend.clone(), options, workers).unwrap()
}

#[test]
fn tasks_run_on_workers_and_can_be_waited_or_awaited() {
    let backend = InMemoryBackend::new();
    let pool = pool(&backend, 2);
    let caller = std::thread::current().id();
    let waited = pool
        .run_async_if_leader("a", move || std::thread::current().id() != caller)
        .unwrap();
    assert_eq!(waited.wait().unwrap(), Some(true));
    let awaited = pool
        .run_async_if_leader_result("b", || Ok::<_, String>(5))
        .unwrap();
    let outcome = futures::executor::block_on(awaited).unwrap();
    assert!(matches!(outcome, LeaderRunResult::Elected { value: 5, .. }));
}

#[test]
fn wait_timeout_reports_a_running_task_and_the_lease_lives_until_the_action_ends() {
    let backend = InMemoryBackend::new();
    let pool = pool(&backend, 1);
    let (release, released) = crossbeam_like_channel();
    let task = pool
        .run_async_if_leader("slow", move || {
            released.recv().unwrap();
            "done"
        })
        .unwrap();
    assert!(!task.wait_timeout(Duration::from_millis(50)));
    assert!(!task.is_finished());
    assert_eq!(pool.state("slow").unwrap().status(), LockStatus::Occupied);
    release.send(()).unwrap();
    assert!(
        task.wait_timeout(Duration::from_secs(10)),
        "finished once released"
    );
    assert!(task.is_finished());
    assert_eq!(task.wait().unwrap(), Some("done"));
    assert_eq!(pool.state("slow").unwrap().status(), LockStatus::Empty);
}

fn crossbeam_like_channel() -> (std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>) {
    std::sync::mpsc::channel()
}

#[test]
fn a_panic_is_resumed_in_the_waiter_after_the_lease_is_released() {
    let backend = InMemoryBackend::new();
    let pool = pool(&backend, 1);
    let task = pool
        .run_async_if_leader("p", || -> u8 { panic!("boom") })
        .unwrap();
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.wait()));
    assert!(waited.is_err());
    assert_eq!(pool.state("p").unwrap().status(), LockStatus::Empty);
    // The worker survived the panic.
    assert_eq!(
        pool.run_async_if_leader("p", || 1).unwrap().wait().unwrap(),
        Some(1)
    );
}

#[test]
fn invalid_names_fail_at_submission_and_backend_errors_come_through_the_handle() {
    let backend = InMemoryBackend::new();
    let pool = pool(&backend, 1);
    assert!(matches!(
        pool.run_async_if_leader("", || ()),
        Err(Error::InvalidName(_))
    ));

    let flaky = FaultyBackend::new(InMemoryBackend::new());
    flaky.set_all(Fault::Fail);
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let pool = ThreadPoolLeaderElector::new(flaky, options, 1).unwrap();
    let task = pool
        .run_async_if_leader("job", || unreachable!("must not run"))
        .unwrap();
    assert!(matches!(task.wait(), Err(Error::Backend(e)) if e.key() == "job"));
}

#[test]
fn after_shutdown_submissions_are_refused_and_queued_tasks_finish() {
    let backend = InMemoryBackend::new();
    let pool = pool(&backend, 1);
    let ran = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..5)
        .map(|i| {
            let ran = Arc::clone(&ran);
            pool.run_async_if_leader(&format!("job-{i}"), move || {
                ran.fetch_add(1, Ordering::SeqCst)
            })
            .unwrap()
        })
        .collect();
    pool.shutdown();
    assert_eq!(
        ran.load(Ordering::SeqCst),
        5,
        "queued tasks finished before the join"
    );
    assert!(handles.into_iter().all(|h| h.is_finished()));
    assert!(matches!(
        pool.run_async_if_leader("late", || ()),
        Err(Error::ShutDown)
    ));
}

#[test]
fn a_pool_and_a_plain_elector_exclude_each_other() {
    let backend = InMemoryBackend::new();
    let pool = pool(&backend, 2);
    let plain = LeaderElector::new(
        backend,
        LeaderElectionOptions::default().with_wait_time(Duration::ZERO),
    )
    .unwrap();
    plain
        .run_if_leader("shared", || {
            let task = pool.run_async_if_leader("shared", || ()).unwrap();
            assert_eq!(task.wait().unwrap(), None);
        })
        .unwrap();
}
