//! One backend shared by several runtimes: each runtime gets its own async connection, so
//! no call waits on a runtime that is not running.

use std::time::{Duration, Instant};

use crate::common::RedisHarness;
use leader_core::{AsyncLockBackend, LockName, LockStatus};
use leader_redis::RedisConfig;

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn shared_by_two_runtimes(harness: RedisHarness) {
    let backend = harness
        .with_config(RedisConfig::default().with_response_timeout(Duration::from_secs(2)))
        .make();
    let key = LockName::new(format!("runtimes:{}", rand_suffix())).unwrap();

    // Runtime A makes the first async call, then stops being driven (a current-thread
    // runtime runs only inside `block_on`): a connection whose I/O task lives on A would
    // never answer again.
    let a = current_thread();
    let state = a.block_on(AsyncLockBackend::state(&backend, &key)).unwrap();
    assert_eq!(state.status(), LockStatus::Empty);

    let b = current_thread();
    let started = Instant::now();
    let state = b.block_on(AsyncLockBackend::state(&backend, &key));
    assert!(
        state.is_ok(),
        "runtime B waited on runtime A's connection: {state:?} after {:?}",
        started.elapsed()
    );
    // And A still works when driven again, on its own connection.
    a.block_on(AsyncLockBackend::state(&backend, &key)).unwrap();
    // A smol caller (no tokio runtime) gets its own connection too.
    #[cfg(feature = "smol")]
    smol::block_on(AsyncLockBackend::state(&backend, &key)).unwrap();
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn a_standalone_backend_serves_several_runtimes() {
    if let Some(harness) = RedisHarness::standalone() {
        shared_by_two_runtimes(harness);
    }
}

#[test]
fn a_cluster_backend_serves_several_runtimes() {
    if let Some(harness) = RedisHarness::cluster() {
        shared_by_two_runtimes(harness);
    }
}
