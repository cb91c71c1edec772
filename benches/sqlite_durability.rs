//! What SQLite's `synchronous = FULL` costs against `NORMAL` (both in WAL mode), for the
//! two kinds of write that must survive a power cut: a record write (a scheduler's tick
//! claim or outcome) and the take of a free lock (its fencing counter).
//!
//! Under `NORMAL` a commit survives a crash of the process but not a power cut: the WAL is
//! synced only before a checkpoint, so the last commits can be lost. Under `FULL` every
//! commit syncs the WAL (one `fsync`). Each group times, in one run and interleaved (each
//! round one cycle of every case, rotating which goes first, so load from elsewhere falls
//! on every case alike):
//!
//! - the raw transaction with `NORMAL` (the baseline) and the same with `FULL`, on
//!   connections of their own with the backend's tables and statements;
//! - what the backend does (`SqliteBackend::write_record`; `try_acquire` of a free lock
//!   then its `release`).
//!
//! It prints each case's median and its ratio to the baseline. Run it on the disk the
//! database would live on: on a `tmpfs` an `fsync` costs nothing.
//!
//! ```text
//! cargo bench -p leader-benches --bench sqlite_durability
//! taskset -c 0 cargo bench -p leader-benches --bench sqlite_durability
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::time::Duration;

use criterion::Criterion;
use leader_benches::{Case, interleaved};
use leader_core::{
    AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken, RecordWrite, ReleaseRequest,
};
use leader_sqlite::SqliteBackend;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

const ROUNDS: usize = 500;

/// A connection to the backend's file with the backend's journal mode and `sync`.
fn raw(path: &Path, sync: &str) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", sync).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn
}

/// The backend's record write: read the version and write the next, in one IMMEDIATE
/// transaction (`leader-sqlite/src/records.rs`).
fn record_write(conn: &mut Connection, name: &str) {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let version: Option<i64> = tx
        .prepare_cached("SELECT version FROM leader_records WHERE name = ?1")
        .unwrap()
        .query_row(params![name], |row| row.get(0))
        .optional()
        .unwrap();
    tx.prepare_cached(
        "INSERT INTO leader_records (name, version, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (name) DO UPDATE SET version = excluded.version, value = excluded.value",
    )
    .unwrap()
    .execute(params![
        name,
        version.unwrap_or(0) + 1,
        r#"{"tick":1786000000,"node":"bench"}"#
    ])
    .unwrap();
    tx.commit().unwrap();
}

/// The writes of a take of a free lock: the fencing counter and the lock row, in one
/// IMMEDIATE transaction (`leader-sqlite/src/ops.rs`, `acquire_in`).
fn take(conn: &mut Connection, name: &str, token: i64) {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    tx.prepare_cached(
        "INSERT INTO leader_fences (name, last_token) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET last_token = excluded.last_token",
    )
    .unwrap()
    .execute(params![name, token])
    .unwrap();
    tx.prepare_cached(
        "INSERT INTO leader_locks
             (name, owner, leader_id, fencing_token, boot_id, acquired_us, expires_us)
         VALUES (?1, 'owner', 'bench', ?2, 'bench-boot', 0, 1)
         ON CONFLICT (name) DO UPDATE SET fencing_token = excluded.fencing_token",
    )
    .unwrap()
    .execute(params![name, token])
    .unwrap();
    tx.commit().unwrap();
}

struct Setup {
    backend: SqliteBackend,
    normal: RefCell<Connection>,
    full: RefCell<Connection>,
    record_key: LockName,
    lock_key: LockName,
    version: Cell<Option<u64>>,
    token: Cell<i64>,
}

impl Setup {
    fn new(path: &Path) -> Setup {
        let backend = SqliteBackend::open(path).unwrap();
        Setup {
            backend,
            normal: RefCell::new(raw(path, "NORMAL")),
            full: RefCell::new(raw(path, "FULL")),
            record_key: LockName::new("bench-record").unwrap(),
            lock_key: LockName::new("bench-lock").unwrap(),
            version: Cell::new(None),
            token: Cell::new(0),
        }
    }

    fn backend_record_write(&self) {
        let write = RecordWrite::new(&self.record_key, self.version.get(), "{}").unwrap();
        let next = write.next_version();
        LockBackend::write_record(&self.backend, write).unwrap();
        self.version.set(Some(next));
    }

    fn backend_take_and_release(&self) {
        let request = AcquireRequest::new(
            &self.lock_key,
            OwnerToken::random(),
            "bench",
            Duration::from_secs(30),
        );
        let AcquireOutcome::Acquired(lease) =
            LockBackend::try_acquire(&self.backend, request).unwrap()
        else {
            panic!("the bench's lock is free");
        };
        LockBackend::release(&self.backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    }

    fn next_token(&self) -> i64 {
        self.token.set(self.token.get() + 1);
        self.token.get()
    }
}

const RECORD_NORMAL: &str = "raw record write, synchronous = NORMAL";
const RECORD_FULL: &str = "raw record write, synchronous = FULL";
const RECORD_BACKEND: &str = "SqliteBackend::write_record";
const TAKE_NORMAL: &str = "raw take (fence + lock row), NORMAL";
const TAKE_FULL: &str = "raw take (fence + lock row), FULL";
const TAKE_BACKEND: &str = "SqliteBackend try_acquire + release";

impl Setup {
    fn record_normal(&self) {
        record_write(&mut self.normal.borrow_mut(), "raw-normal");
    }

    fn record_full(&self) {
        record_write(&mut self.full.borrow_mut(), "raw-full");
    }

    fn take_normal(&self) {
        take(
            &mut self.normal.borrow_mut(),
            "raw-normal",
            self.next_token(),
        );
    }

    fn take_full(&self) {
        take(&mut self.full.borrow_mut(), "raw-full", self.next_token());
    }
}

fn criterion_groups(c: &mut Criterion, s: &Setup) {
    let mut group = c.benchmark_group("sqlite records");
    group.bench_function(RECORD_NORMAL, |b| b.iter(|| s.record_normal()));
    group.bench_function(RECORD_FULL, |b| b.iter(|| s.record_full()));
    group.bench_function(RECORD_BACKEND, |b| b.iter(|| s.backend_record_write()));
    group.finish();
    let mut group = c.benchmark_group("sqlite takes");
    group.bench_function(TAKE_NORMAL, |b| b.iter(|| s.take_normal()));
    group.bench_function(TAKE_FULL, |b| b.iter(|| s.take_full()));
    group.bench_function(TAKE_BACKEND, |b| b.iter(|| s.backend_take_and_release()));
    group.finish();
}

fn interleaved_groups(s: &Setup, rounds: usize) {
    let mut records: Vec<Case<'_>> = vec![
        (RECORD_NORMAL, Box::new(|| s.record_normal())),
        (RECORD_FULL, Box::new(|| s.record_full())),
        (RECORD_BACKEND, Box::new(|| s.backend_record_write())),
    ];
    interleaved("sqlite records", rounds, &mut records);
    let mut takes: Vec<Case<'_>> = vec![
        (TAKE_NORMAL, Box::new(|| s.take_normal())),
        (TAKE_FULL, Box::new(|| s.take_full())),
        (TAKE_BACKEND, Box::new(|| s.backend_take_and_release())),
    ];
    interleaved("sqlite takes", rounds, &mut takes);
}

fn main() {
    let dir = std::env::temp_dir().join(format!(
        "leader-bench-sqlite-durability-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let setup = Setup::new(&dir.join("locks.db"));
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .configure_from_args();
    criterion_groups(&mut criterion, &setup);
    criterion.final_summary();
    if !leader_benches::name_filter_given() {
        interleaved_groups(&setup, ROUNDS);
    }
    drop(setup);
    std::fs::remove_dir_all(&dir).unwrap();
}
