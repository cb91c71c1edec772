//! Async runs stay small futures on every backend, so that runs nest (an action that runs
//! another elector's action) on a thread's 2 MiB stack, on every runtime, in a debug build.
//!
//! A debug build copies a future several times per executor layer before polling it:
//! async-std's `block_on` alone keeps about 57 copies of the future it is given on the
//! stack, so a 36 KiB future (what a nested Redis run was) overflows a 2 MiB thread.

use crate::on_every_backend;
use leader::backend::AsyncLockBackend;
use leader::{AnyBackend, AsyncLeaderElector, LeaderElectionOptions};

/// The stack of a thread spawned without a size, and of a test's thread.
const STACK: usize = 2 * 1024 * 1024;

/// A `run_if_leader` future of any backend stays below this (it was 12 KiB on Redis).
const RUN_BOUND: usize = 5 * 1024;

type Elector = AsyncLeaderElector<AnyBackend>;

/// `block_on(outer run { inner run { 2 } })` on a fresh thread with a 2 MiB stack.
fn nested_on_a_small_stack(
    backend: AnyBackend,
    block_on: fn(&Elector, &Elector, &str, &str) -> Option<Option<u32>>,
) {
    let shared = std::sync::Arc::new(backend);
    let options = LeaderElectionOptions::default();
    let outer =
        Elector::with_shared_backend(std::sync::Arc::clone(&shared), options.clone()).unwrap();
    let inner = Elector::with_shared_backend(shared, options).unwrap();
    let name = format!("nesting:{}:{}", std::process::id(), rand::random::<u32>());
    let answer = std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || {
            block_on(
                &outer,
                &inner,
                &format!("{name}:outer"),
                &format!("{name}:inner"),
            )
        })
        .unwrap()
        .join()
        .expect("the nested run must not overflow the thread's stack");
    assert_eq!(answer, Some(Some(2)));
}

async fn nested(
    outer: &Elector,
    inner: &Elector,
    outer_name: &str,
    inner_name: &str,
) -> Option<Option<u32>> {
    outer
        .run_if_leader(outer_name, || async {
            inner
                .run_if_leader(inner_name, || async { 2 })
                .await
                .unwrap()
        })
        .await
        .unwrap()
}

/// The futures of a run and of a nested run over `backend`, measured and bounded.
fn sizes_of<B: AsyncLockBackend + 'static>(backend: B, label: &str) {
    let elector = AsyncLeaderElector::new(backend, LeaderElectionOptions::default()).unwrap();
    let run = std::mem::size_of_val(&elector.run_if_leader("nesting:size", || async { 1 }));
    let nested = std::mem::size_of_val(&async {
        elector
            .run_if_leader("a", || async {
                elector.run_if_leader("b", || async { 2 }).await
            })
            .await
    });
    println!("{label}: run_if_leader future {run} bytes, nested {nested} bytes");
    assert!(
        run <= RUN_BOUND,
        "{label}: a run_if_leader future is {run} bytes (bound {RUN_BOUND})"
    );
    assert!(
        nested <= 2 * RUN_BOUND,
        "{label}: a nested run future is {nested} bytes"
    );
}

fn run_future_is_small(backend: AnyBackend) {
    let kind = backend.kind();
    match backend.clone() {
        AnyBackend::Memory(b) => sizes_of(b, kind),
        AnyBackend::Redis(b) => sizes_of(b, kind),
        AnyBackend::Mongo(b) => sizes_of(b, kind),
        AnyBackend::Sqlite(b) => sizes_of(b, kind),
        AnyBackend::Postgres(b) => sizes_of(b, kind),
        AnyBackend::Etcd(b) => sizes_of(b, kind),
        _ => panic!("a backend this test does not know"),
    }
    sizes_of(backend, &format!("AnyBackend ({kind})"));
}

fn nested_runs_fit_on_async_std(backend: AnyBackend) {
    nested_on_a_small_stack(backend, |outer, inner, a, b| {
        async_std::task::block_on(nested(outer, inner, a, b))
    });
}

fn nested_runs_fit_on_smol(backend: AnyBackend) {
    nested_on_a_small_stack(backend, |outer, inner, a, b| {
        smol::block_on(nested(outer, inner, a, b))
    });
}

fn nested_runs_fit_on_tokio(backend: AnyBackend) {
    nested_on_a_small_stack(backend, |outer, inner, a, b| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(nested(outer, inner, a, b))
    });
}

on_every_backend!(
    run_future_is_small,
    nested_runs_fit_on_async_std,
    nested_runs_fit_on_smol,
    nested_runs_fit_on_tokio,
);
