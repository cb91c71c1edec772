//! Shared by the integration tests: a database file in a directory of the test's own,
//! and the contract-suite harness on it.
#![allow(dead_code, unreachable_pub, missing_docs)]
#![allow(clippy::unwrap_used)]

use std::future::{Future, ready};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use leader_sqlite::SqliteBackend;
use leader_testkit::Harness;

/// A fresh directory, removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(what: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("leader-sqlite-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The contract harness: a new backend (a new connection) per call on one file, time
/// passing by sleeping, the host's clock as the backend's.
#[derive(Debug)]
pub struct SqliteHarness {
    dir: TempDir,
}

impl SqliteHarness {
    pub fn new() -> Option<SqliteHarness> {
        Some(SqliteHarness {
            dir: TempDir::new("contract"),
        })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.file("locks.db")
    }
}

impl Harness for SqliteHarness {
    type Backend = SqliteBackend;

    fn backend(&self) -> impl Future<Output = SqliteBackend> {
        ready(SqliteBackend::open(self.path()).unwrap())
    }

    fn advance(&self, by: Duration) {
        std::thread::sleep(by);
    }

    fn backend_now(&self) -> SystemTime {
        SystemTime::now()
    }

    /// Waited out with real sleeps: long enough that a loaded machine's scheduling delays
    /// cannot expire a lease early.
    fn short_lease(&self) -> Duration {
        Duration::from_millis(600)
    }

    fn clock_tolerance(&self) -> Duration {
        Duration::from_millis(300)
    }
}
