//! Each call is bounded by its own busy timeout: with the database's write lock held by
//! another process, k callers of one backend value each fail with a transient error after
//! about one busy timeout, not one after the other (the k-th after k timeouts), on the
//! blocking API and on the async one alike.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::TempDir;
use leader_core::{AcquireRequest, AsyncLockBackend, Error, LockBackend, LockName, OwnerToken};
use leader_sqlite::{SqliteBackend, SqliteConfig};
use leader_testkit::{Runner, ThreadRunner, TokioRunner};

const CHILD: &str = "LEADER_SQLITE_WRITER_DB";
const BUSY_TIMEOUT: Duration = Duration::from_millis(500);
const CALLERS: usize = 6;
/// One busy timeout, and as much again for a loaded machine's scheduling: far below the
/// two timeouts the second caller in a queue would take.
const WITHIN: Duration = Duration::from_millis(1_000);

/// The child: takes the write lock, says so, and keeps it until its stdin closes.
fn hold_the_write_lock(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    println!("holding");
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
}

/// A child process of this test binary that holds `path`'s write lock until dropped (its
/// output is kept open, so that it can finish writing).
struct Writer(Child, BufReader<std::process::ChildStdout>);

impl Writer {
    fn start(path: &Path, test: &str) -> Writer {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture"])
            .env(CHILD, path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while stdout.read_line(&mut line).unwrap() > 0 && line.trim_end() != "holding" {
            line.clear();
        }
        assert_eq!(
            line.trim_end(),
            "holding",
            "the writer process never took the lock"
        );
        Writer(child, stdout)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let mut rest = Vec::new();
        let _ = self.1.read_to_end(&mut rest);
        let _ = self.0.wait();
    }
}

fn backend(dir: &TempDir) -> SqliteBackend {
    let config = SqliteConfig::new().with_busy_timeout(BUSY_TIMEOUT);
    SqliteBackend::open_with(dir.file("locks.db"), config).unwrap()
}

/// Each caller's error and how long it took.
fn check(results: Vec<(Result<(), Error>, Duration)>) {
    let took: Vec<Duration> = results.iter().map(|(_, took)| *took).collect();
    println!("{CALLERS} callers, busy timeout {BUSY_TIMEOUT:?}: {took:?}");
    for (result, took) in results {
        let err = result.expect_err("the write lock is held: no call can succeed");
        assert!(err.is_transient(), "a busy database is transient: {err:?}");
        assert!(
            took >= BUSY_TIMEOUT.mul_f32(0.8),
            "a call gives up only after its busy timeout, not after {took:?}"
        );
        assert!(
            took <= WITHIN,
            "each call is bounded by its own busy timeout ({BUSY_TIMEOUT:?}), but one took {took:?}: {:?}",
            err
        );
    }
}

fn names() -> Vec<LockName> {
    (0..CALLERS)
        .map(|i| LockName::new(format!("timeout-{i}")).unwrap())
        .collect()
}

#[test]
fn blocking_callers_each_wait_one_busy_timeout() {
    if let Some(path) = std::env::var_os(CHILD) {
        hold_the_write_lock(Path::new(&path));
        return;
    }
    let dir = TempDir::new("timeout-blocking");
    let backend = backend(&dir);
    let _writer = Writer::start(
        &dir.file("locks.db"),
        "timeout::blocking_callers_each_wait_one_busy_timeout",
    );
    let calls = names().into_iter().map(|key| {
        let backend = backend.clone();
        async move {
            let started = Instant::now();
            let request =
                AcquireRequest::new(&key, OwnerToken::random(), "node", Duration::from_secs(30));
            let result = LockBackend::try_acquire(&backend, request).map(drop);
            (result, started.elapsed())
        }
    });
    check(ThreadRunner.race(calls.collect()));
}

#[test]
fn async_callers_each_wait_one_busy_timeout() {
    if let Some(path) = std::env::var_os(CHILD) {
        hold_the_write_lock(Path::new(&path));
        return;
    }
    let dir = TempDir::new("timeout-async");
    let backend = backend(&dir);
    let _writer = Writer::start(
        &dir.file("locks.db"),
        "timeout::async_callers_each_wait_one_busy_timeout",
    );
    let calls = names().into_iter().map(|key| {
        let backend = backend.clone();
        async move {
            let started = Instant::now();
            let request =
                AcquireRequest::new(&key, OwnerToken::random(), "node", Duration::from_secs(30));
            let result = AsyncLockBackend::try_acquire(&backend, request)
                .await
                .map(drop);
            (result, started.elapsed())
        }
    });
    check(TokioRunner::multi_thread().race(calls.collect()));
}
