//! Signals: a blocking call must not fail because a signal handler ran while it waited
//! for the server. A socket read with a timeout is never restarted after a handler runs
//! (Linux answers `EINTR` even under `SA_RESTART`), and a process that spawns children,
//! or uses tokio's signal or process drivers, has handlers installed.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::common;
use leader_core::{LockBackend, LockName};
use leader_redis::{RedisBackend, RedisConfig};
use leader_testkit::fresh_name;
use nix::sys::pthread::{Pthread, pthread_kill, pthread_self};
use nix::sys::signal::Signal;

#[test]
fn a_signal_handled_while_a_call_waits_for_the_server_does_not_fail_the_call() {
    let Some(server) = common::private_server() else {
        return;
    };
    // A handler for SIGUSR1, as tokio installs one for each signal it is asked to watch.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _watch = runtime
        .block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
        })
        .unwrap();
    let config = RedisConfig::default()
        .with_connect_timeout(Duration::from_secs(5))
        .with_response_timeout(Duration::from_secs(10));
    let backend = RedisBackend::connect_with(&server.url(), config).unwrap();
    let key: LockName = fresh_name("signal");
    // A pooled connection, so that the call below goes straight to its read.
    LockBackend::state(&backend, &key).unwrap();

    server.pause();
    let (caller_tx, caller_rx) = mpsc::channel::<Pthread>();
    let (done_tx, done_rx) = mpsc::channel();
    let caller = {
        let backend = backend.clone();
        let key = key.clone();
        thread::spawn(move || {
            caller_tx.send(pthread_self()).unwrap();
            done_tx.send(LockBackend::state(&backend, &key)).unwrap();
        })
    };
    let thread = caller_rx.recv().unwrap();
    // Signal the caller while the paused server keeps its call waiting: every signal
    // lands in its read, or just before it.
    for _ in 0..50 {
        pthread_kill(thread, Signal::SIGUSR1).unwrap();
        thread::sleep(Duration::from_millis(10));
    }
    server.resume();
    let answer = done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the call returns once the server answers");
    caller.join().unwrap();
    let state = answer.expect("a handled signal must not fail the call");
    assert!(state.leader().is_none(), "{state:?}");
}
