//! The bridge in each backend's configuration: MongoDB's (async calls on the caller's
//! tokio runtime, a blocking call overdue at its deadline handed to the background
//! runtime) and PostgreSQL's (async calls on the background runtime, a blocking call
//! dropped at its deadline).

#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

const FIVE_SECONDS: Option<Duration> = Some(Duration::from_secs(5));

fn mongodb() -> Background {
    Background::builder("leader-mongodb")
        .on_caller_runtime(true)
        .build()
        .unwrap()
}

fn postgres() -> Background {
    Background::builder("leader-postgres")
        .drop_blocking_calls_at_deadline(true)
        .build()
        .unwrap()
}

fn thread_name() -> Option<String> {
    std::thread::current().name().map(str::to_owned)
}

fn tokio() -> Runtime {
    Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn blocks_from_a_plain_thread_and_from_inside_a_runtime() {
    let background = Arc::new(mongodb());
    let one = background.block_on(FIVE_SECONDS, async { 1 });
    assert_eq!(one.unwrap(), 1);

    let rt = tokio();
    let inside = rt.block_on({
        let background = Arc::clone(&background);
        async move { background.block_on(FIVE_SECONDS, async { 2 }) }
    });
    assert_eq!(inside.unwrap(), 2);
}

#[test]
fn runs_on_foreign_executors_and_on_tokio() {
    let background = mongodb();
    let on_futures =
        futures::executor::block_on(background.run(FIVE_SECONDS, async { thread_name() }));
    assert_eq!(on_futures.unwrap().as_deref(), Some("leader-mongodb"));

    // The runtime is chosen when `run` is called (the backends call it from inside their
    // own async functions, so at their first poll).
    let rt = tokio();
    let on_tokio =
        rt.block_on(async { background.run(FIVE_SECONDS, async { thread_name() }).await });
    assert_ne!(on_tokio.unwrap().as_deref(), Some("leader-mongodb"));
    let built_outside = background.run(FIVE_SECONDS, async { thread_name() });
    let on_tokio = rt.block_on(built_outside);
    assert_eq!(on_tokio.unwrap().as_deref(), Some("leader-mongodb"));
}

#[test]
fn a_deadline_leaves_the_operation_running() {
    let background = mongodb();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&finished);
    let result = background.block_on(Some(Duration::from_millis(20)), async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        flag.store(true, Ordering::SeqCst);
    });
    assert_eq!(result, Err(Stopped::TimedOut(Duration::from_millis(20))));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        finished.load(Ordering::SeqCst),
        "the operation ran to its end"
    );
}

#[test]
fn an_async_deadline_leaves_the_operation_running_on_tokio_and_elsewhere() {
    let background = mongodb();
    let tokio = tokio();
    for on_tokio in [true, false] {
        let finished = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&finished);
        let op = async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            flag.store(true, Ordering::SeqCst);
        };
        let deadline = Some(Duration::from_millis(20));
        let result = if on_tokio {
            tokio.block_on(async {
                let result = background.run(deadline, op).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                result
            })
        } else {
            let result = futures::executor::block_on(background.run(deadline, op));
            std::thread::sleep(Duration::from_millis(300));
            result
        };
        assert_eq!(result, Err(Stopped::TimedOut(Duration::from_millis(20))));
        assert!(finished.load(Ordering::SeqCst), "on tokio: {on_tokio}");
    }
}

#[test]
fn a_panicking_operation_is_an_error() {
    let background = mongodb();
    let result: Result<(), _> = background.block_on(FIVE_SECONDS, async { panic!("driver bug") });
    assert_eq!(result, Err(Stopped::Panicked));
}

#[test]
fn dropping_inside_a_runtime_does_not_panic() {
    let background = mongodb();
    let rt = tokio();
    rt.block_on(async move { drop(background) });
}

#[test]
fn blocks_from_a_plain_thread_and_from_inside_a_runtime_and_awaits_elsewhere() {
    let background = Arc::new(postgres());
    assert_eq!(background.block_on(None, async { 1 }).unwrap(), 1);
    let rt = tokio();
    let inside = rt.block_on({
        let background = Arc::clone(&background);
        async move { background.block_on(None, async { 2 }) }
    });
    assert_eq!(inside.unwrap(), 2);
    let on_futures = futures::executor::block_on(background.run(None, async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        thread_name()
    }));
    assert_eq!(on_futures.unwrap().as_deref(), Some("leader-postgres"));
}

#[test]
fn a_panicking_call_is_an_error_and_dropping_inside_a_runtime_is_fine() {
    let background = postgres();
    let result: Result<(), _> =
        futures::executor::block_on(background.run(None, async { panic!("driver bug") }));
    assert!(matches!(result, Err(Stopped::Panicked)));
    let rt = tokio();
    rt.block_on(async move { drop(background) });
}

#[test]
fn the_options_decide_where_calls_run() {
    let caller = thread_name();
    let rt = tokio();
    // PostgreSQL's: a blocking call runs on this thread, an async one on the background
    // worker even when the caller is on tokio.
    let background = postgres();
    assert_eq!(
        background.block_on(None, async { thread_name() }),
        Ok(caller.clone())
    );
    let on_tokio = rt.block_on(background.run(None, async { thread_name() }));
    assert_eq!(on_tokio.unwrap().as_deref(), Some("leader-postgres"));
    // MongoDB's: a blocking call runs on this thread too, an async one on the caller's
    // runtime.
    let background = mongodb();
    let blocking = background.block_on(FIVE_SECONDS, async { thread_name() });
    assert_eq!(blocking, Ok(caller));
    let on_tokio =
        rt.block_on(async { background.run(FIVE_SECONDS, async { thread_name() }).await });
    assert_ne!(on_tokio.unwrap().as_deref(), Some("leader-mongodb"));
}

/// Sets its flag when dropped: whether a call's future is gone.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_call_driven_on_the_calling_thread_stops_at_its_deadline() {
    let background = postgres();
    let deadline = Duration::from_millis(20);
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(Arc::clone(&dropped));
    let started = std::time::Instant::now();
    let result = background.block_on(Some(deadline), async move {
        let _flag = flag;
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    assert_eq!(result, Err(Stopped::TimedOut(deadline)));
    assert!(
        started.elapsed() >= deadline,
        "returned before its deadline"
    );
    assert!(
        dropped.load(Ordering::SeqCst),
        "the call was dropped on return"
    );
}

#[test]
fn a_call_driven_on_the_calling_thread_and_overdue_finishes_on_the_background_worker() {
    let background = mongodb();
    let deadline = Duration::from_millis(20);
    let (sender, finished_on) = mpsc::sync_channel(1);
    let result = background.block_on(Some(deadline), async move {
        let started_on = thread_name();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = sender.send((started_on, thread_name()));
    });
    assert_eq!(result, Err(Stopped::TimedOut(deadline)));
    let (started_on, ended_on) = finished_on
        .recv_timeout(Duration::from_secs(10))
        .expect("the call ran to its end");
    assert_eq!(started_on, thread_name(), "started on the calling thread");
    assert_eq!(ended_on.as_deref(), Some("leader-mongodb"));
}

#[test]
fn a_panic_in_a_call_driven_on_the_calling_thread_is_an_error() {
    for background in [mongodb(), postgres()] {
        let result: Result<(), _> =
            background.block_on(FIVE_SECONDS, async { panic!("driver bug") });
        assert_eq!(result, Err(Stopped::Panicked));
    }
}

#[test]
fn a_call_driven_on_the_calling_thread_spawns_and_times_on_the_background_runtime() {
    // The call is not on a runtime of its own: what it spawns goes to the background
    // worker, and its tokio timers work.
    let background = mongodb();
    let spawned_on = background.block_on(FIVE_SECONDS, async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        tokio::spawn(async { thread_name() }).await.ok().flatten()
    });
    assert_eq!(spawned_on, Ok(Some("leader-mongodb".to_owned())));
}

#[test]
fn run_here_runs_on_the_background_runtime_from_tokio_too() {
    let background = mongodb();
    let rt = tokio();
    let here = rt.block_on(background.run_here(FIVE_SECONDS, async { thread_name() }));
    assert_eq!(here.unwrap().as_deref(), Some("leader-mongodb"));
}
