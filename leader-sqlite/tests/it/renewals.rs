//! Auto-extended leases while another process holds the database's write lock (a `sqlite3`
//! shell in an open `BEGIN IMMEDIATE`): every lease's loss is signalled at its own
//! deadline, not when a renewal stuck behind the lock gives up after the busy timeout.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::TempDir;
use leader_blocking::LeaderElector;
use leader_core::{LeaderElectionOptions, LeaseContext, LeaseMode};
use leader_rig::DeadlineWitness;
use leader_sqlite::{SqliteBackend, SqliteConfig};
use leader_testkit::{Runner, ThreadRunner, within};

const LEASE: Duration = Duration::from_secs(3);
/// Far longer than the lease: a renewal waiting for the write lock outlives its lease.
const BUSY: Duration = Duration::from_secs(8);
/// How late after its deadline a loss may be signalled, beyond how late a plain thread
/// parked until the same deadline woke (the host's own delay, on a loaded machine).
const SIGNAL_BOUND: Duration = Duration::from_millis(300);

/// A `sqlite3` shell holding the write lock of a database file until dropped.
struct WriteLocker {
    shell: Child,
    input: ChildStdin,
}

impl WriteLocker {
    /// Starts the shell and waits until its `BEGIN IMMEDIATE` holds the lock; `None` when
    /// there is no `sqlite3` to start (and servers are not required).
    fn lock(path: &Path) -> Option<WriteLocker> {
        let started = Command::new("sqlite3")
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut shell = leader_rig::fixtures::require("sqlite3", started)?;
        let mut input = shell.stdin.take().unwrap();
        input
            .write_all(b"BEGIN IMMEDIATE;\n.print locked\n")
            .unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        BufReader::new(shell.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked", "the shell took the write lock");
        Some(WriteLocker { shell, input })
    }
}

impl Drop for WriteLocker {
    fn drop(&mut self) {
        let _ = self.input.write_all(b"ROLLBACK;\n.quit\n");
        let _ = self.input.flush();
        let quit = Instant::now() + Duration::from_secs(5);
        while Instant::now() < quit {
            if let Ok(Some(_)) = self.shell.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.shell.kill();
        let _ = self.shell.wait();
    }
}

/// When `lost()` resolved (the lease marked lost: what wakes the action and counts
/// `leader_lease_lost_total`), within `timeout`.
fn lost_signalled(lease: &LeaseContext, timeout: Duration) -> Option<Instant> {
    ThreadRunner
        .block_on(within(timeout, lease.lost()))
        .map(|()| Instant::now())
}

#[track_caller]
fn lost_at_its_deadline(lease: &LeaseContext, what: &str) {
    let deadline = lease.deadline();
    let witness = DeadlineWitness::start(deadline);
    let lost_at =
        lost_signalled(lease, BUSY * 2).unwrap_or_else(|| panic!("{what}: lost() never resolved"));
    let late = witness.assert_on_time(lost_at, SIGNAL_BOUND, &format!("{what}: lost()"));
    eprintln!("{what}: {late:?}");
}

#[test]
fn each_lease_is_lost_at_its_own_deadline_while_another_process_holds_the_write_lock() {
    let dir = TempDir::new("renewals");
    let path = dir.file("locks.db");
    let backend =
        SqliteBackend::open_with(&path, SqliteConfig::new().with_busy_timeout(BUSY)).unwrap();
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = LeaderElector::new(backend, options).unwrap();
    let mode = LeaseMode::Watchdog { timeout: LEASE };
    let first = elector.acquire("first", mode).unwrap();
    let first_taken = Instant::now();
    // Taken 0.7 renewal intervals later: renewed in a later batch than first.
    std::thread::sleep(LEASE / 3 * 7 / 10);
    let second = elector.acquire("second", mode).unwrap();
    // Just before first's renewal is due, another process takes the write lock.
    std::thread::sleep(
        (first_taken + LEASE / 3 * 17 / 20).saturating_duration_since(Instant::now()),
    );
    let Some(_locker) = WriteLocker::lock(&path) else {
        return;
    };
    let started = Instant::now();
    lost_at_its_deadline(first.context(), "first");
    lost_at_its_deadline(second.context(), "second");
    assert!(
        started.elapsed() < BUSY,
        "both losses signalled before the stuck renewal gave up"
    );
}
