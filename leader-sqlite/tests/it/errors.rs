//! Bad files are clear, typed errors, and nothing in them is lost: a path in a missing
//! directory, a file that is not a database, a database kept locked by another
//! connection, a read-only database, a table of the same name made by someone else, a
//! record garbled by hand.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::TempDir;
use leader_core::{AcquireRequest, Error, LockBackend, LockName, OwnerToken, RecordWrite};
use leader_sqlite::{ConnectError, SqliteBackend, SqliteConfig};
use leader_testkit::{Runner, SmolRunner, checks};

fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest::new(key, OwnerToken::random(), "node", Duration::from_secs(30))
}

#[test]
fn a_path_in_a_missing_directory_cannot_be_opened() {
    let dir = TempDir::new("missing");
    let path = dir.file("no/such/dir/locks.db");
    let err = SqliteBackend::open(&path).unwrap_err();
    assert!(matches!(err, ConnectError::CannotOpen { .. }), "{err:?}");
    assert!(err.to_string().contains("no/such/dir/locks.db"), "{err}");
    assert!(!dir.file("no").exists(), "no directory was created");
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_as_it_was() {
    let dir = TempDir::new("corrupt");
    let path = dir.file("locks.db");
    for garbage in [
        b"this is not an SQLite database, but someone's notes\n".repeat(200),
        b"SQLite format 3\0 and then nonsense".repeat(300),
    ] {
        std::fs::write(&path, &garbage).unwrap();
        let before = snapshot(&dir, "locks.db");
        let err = SqliteBackend::open(&path).unwrap_err();
        assert!(matches!(err, ConnectError::NotADatabase { .. }), "{err:?}");
        assert_eq!(
            snapshot(&dir, "locks.db"),
            before,
            "the file is untouched, with nothing beside it"
        );
    }
}

/// The file's bytes and the directory's entries, to show a refusal wrote nothing: not the
/// file, not a journal or WAL beside it.
#[derive(PartialEq, Eq)]
struct Snapshot {
    bytes: Vec<u8>,
    entries: Vec<String>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes, files {:?}", self.bytes.len(), self.entries)
    }
}

fn snapshot(dir: &TempDir, file: &str) -> Snapshot {
    let mut entries: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    Snapshot {
        bytes: std::fs::read(dir.file(file)).unwrap(),
        entries,
    }
}

/// An application's database, in its own journal mode, with `sql` run on it.
fn app_database(dir: &TempDir, sql: &str) -> std::path::PathBuf {
    let path = dir.file("app.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT); INSERT INTO orders (item) VALUES ('tea');")
        .unwrap();
    conn.execute_batch(sql).unwrap();
    path
}

#[test]
fn a_table_of_the_same_name_made_by_someone_else_is_refused_and_nothing_is_written() {
    for (table, sql) in [
        (
            "leader_locks",
            "CREATE TABLE leader_locks (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO leader_locks (note) VALUES ('mine');",
        ),
        (
            "leader_fences",
            "CREATE TABLE leader_fences (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO leader_fences (note) VALUES ('mine');",
        ),
        (
            "leader_locks",
            "CREATE VIEW leader_locks AS SELECT * FROM orders;",
        ),
        (
            "leader_records",
            "CREATE TABLE leader_records (name TEXT PRIMARY KEY, note TEXT); INSERT INTO leader_records VALUES ('job', 'mine');",
        ),
        (
            "leader_rw",
            "CREATE TABLE leader_rw (name TEXT PRIMARY KEY, note TEXT); INSERT INTO leader_rw VALUES ('job', 'mine');",
        ),
        (
            "leader_rw_holders",
            "CREATE TABLE leader_rw_holders (name TEXT, note TEXT); INSERT INTO leader_rw_holders VALUES ('job', 'mine');",
        ),
    ] {
        let dir = TempDir::new("foreign");
        let path = app_database(&dir, sql);
        let before = snapshot(&dir, "app.db");
        let err = SqliteBackend::open(&path).unwrap_err();
        assert!(
            matches!(&err, ConnectError::ForeignTable { table: t, .. } if *t == table),
            "{sql}: {err:?}"
        );
        assert_eq!(
            snapshot(&dir, "app.db"),
            before,
            "{sql}: a refused database is left byte for byte as it was, with no file beside it"
        );
    }
}

/// A database this crate made, then changed by `sql`, left in `journal` mode (with no
/// journal or WAL beside it once closed).
fn changed_database(dir: &TempDir, sql: &str, journal: &str) -> std::path::PathBuf {
    let path = dir.file("locks.db");
    drop(SqliteBackend::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "journal_mode", journal).unwrap();
    conn.execute_batch(sql).unwrap();
    path
}

#[test]
fn tables_of_a_newer_version_are_refused_and_nothing_is_written() {
    for journal in ["DELETE", "WAL"] {
        let dir = TempDir::new("newer");
        let path = changed_database(
            &dir,
            "UPDATE leader_schema SET version = 3; ALTER TABLE leader_locks ADD COLUMN extra TEXT;",
            journal,
        );
        refused_as_newer(&dir, &path);
    }
}

fn refused_as_newer(dir: &TempDir, path: &std::path::Path) {
    let before = snapshot(dir, "locks.db");
    let err = SqliteBackend::open(path).unwrap_err();
    assert!(
        matches!(
            err,
            ConnectError::NewerSchema {
                found: 3,
                supported: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("version 3"), "{err}");
    assert_eq!(snapshot(dir, "locks.db"), before, "nothing is written");
}

#[test]
fn a_schema_table_of_another_shape_is_refused_and_nothing_is_written() {
    for sql in [
        "DROP TABLE leader_schema; CREATE TABLE leader_schema (v TEXT);",
        "DELETE FROM leader_schema;",
        "UPDATE leader_schema SET version = 'two';",
        "UPDATE leader_schema SET version = 1;",
        "DROP TABLE leader_fences;",
        "ALTER TABLE leader_locks DROP COLUMN boot_id;",
    ] {
        let dir = TempDir::new("schema-shape");
        let path = changed_database(&dir, sql, "WAL");
        let before = snapshot(&dir, "locks.db");
        let err = SqliteBackend::open(&path).unwrap_err();
        assert!(
            matches!(err, ConnectError::ForeignTable { .. }),
            "{sql}: {err:?}"
        );
        assert_eq!(
            snapshot(&dir, "locks.db"),
            before,
            "{sql}: nothing is written"
        );
    }
}

/// A busy timeout beyond what SQLite counts (milliseconds in an `i32`) is cut to the
/// longest it does, not a panic.
#[test]
fn an_endless_busy_timeout_is_the_longest_sqlite_takes() {
    let dir = TempDir::new("endless-busy");
    let config = SqliteConfig::new().with_busy_timeout(Duration::MAX);
    assert_eq!(config.busy_timeout(), SqliteConfig::MAX_BUSY_TIMEOUT);
    let backend = SqliteBackend::open_with(dir.file("locks.db"), config).unwrap();
    let key = LockName::new("endless").unwrap();
    assert!(backend.try_acquire(request(&key)).is_ok());
}

#[test]
fn a_database_locked_by_another_connection_is_a_transient_error_then_works() {
    let dir = TempDir::new("locked");
    let path = dir.file("locks.db");
    let config = SqliteConfig::new().with_busy_timeout(Duration::from_millis(200));
    let backend = SqliteBackend::open_with(&path, config).unwrap();
    let key = LockName::new("nightly").unwrap();

    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let started = Instant::now();
    let err = backend.try_acquire(request(&key)).unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert!(
        matches!(&err, Error::Backend(e) if e.key() == "nightly"),
        "{err:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "it waited the busy timeout"
    );

    other.execute_batch("COMMIT").unwrap();
    assert!(
        backend.try_acquire(request(&key)).is_ok(),
        "the lock works once freed"
    );
}

/// The read-only checks run as an unprivileged user: root may write to any file. A
/// read-only file is refused as read-only; a writable file in a read-only directory (no
/// room for the journal or WAL beside it) cannot be opened for writing either. Neither is
/// changed, and no file appears beside it.
#[test]
fn a_read_only_database_is_refused() {
    const CHILD: &str = "LEADER_SQLITE_READ_ONLY_DB";
    if let Some(path) = std::env::var_os(CHILD) {
        let err = SqliteBackend::open(&path).unwrap_err();
        let expected = std::env::var("LEADER_SQLITE_READ_ONLY_EXPECT").unwrap();
        let kind = match &err {
            ConnectError::ReadOnly { .. } => "read-only",
            ConnectError::CannotOpen { .. } => "cannot-open",
            _ => "other",
        };
        assert_eq!(kind, expected, "{err:?}");
        return;
    }
    for (journal, file_mode, expected) in [
        ("WAL", 0o444, "read-only"),
        ("DELETE", 0o444, "read-only"),
        ("WAL", 0o666, "read-only"),
        ("DELETE", 0o666, "read-only"),
    ] {
        let dir = TempDir::new("read-only");
        let path = dir.file("locks.db");
        drop(SqliteBackend::open(&path).unwrap());
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", journal).unwrap();
        drop(conn);
        let before = snapshot(&dir, "locks.db");
        for (entry, mode) in [(path.as_path(), file_mode), (dir.path(), 0o555)] {
            std::fs::set_permissions(entry, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let exe = std::env::current_exe().unwrap();
        let args = [
            "--exact",
            "errors::a_read_only_database_is_refused",
            "--nocapture",
        ];
        let is_root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
        let mut child = if is_root {
            let mut setpriv = Command::new("setpriv");
            setpriv
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&exe);
            setpriv
        } else {
            Command::new(&exe)
        };
        let status = child
            .args(args)
            .env(CHILD, &path)
            .env("LEADER_SQLITE_READ_ONLY_EXPECT", expected)
            .status()
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(
            status.success(),
            "{journal}, file {file_mode:o}: the unprivileged child failed: {status}"
        );
        assert_eq!(
            snapshot(&dir, "locks.db"),
            before,
            "{journal}, file {file_mode:o}: the file is untouched, with nothing beside it"
        );
    }
}

/// The record `name` as stored: the type and the bytes of each column.
fn stored_record(path: &std::path::Path, name: &str) -> (String, Vec<u8>, String, Vec<u8>) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        "SELECT typeof(version), CAST(version AS BLOB), typeof(value), CAST(value AS BLOB)
         FROM leader_records WHERE name = ?1",
        [name],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
    )
    .unwrap()
}

#[test]
fn a_garbled_record_is_a_permanent_error_and_stays_as_it_was() {
    let dir = TempDir::new("garbled-record");
    let path = dir.file("locks.db");
    let backend = SqliteBackend::open(&path).unwrap();
    let key = LockName::new("nightly").unwrap();
    // Each garbled row, with the version a writer may expect of it.
    for (case, version, value, expected) in [
        ("version is text", "'one'", "'v'", Some(1)),
        ("version is zero", "0", "'v'", None),
        ("version is negative", "-1", "'v'", Some(1)),
        ("version is a real", "1.5", "'v'", Some(1)),
        ("value is a blob", "1", "x'00ff'", Some(1)),
        (
            "value is not UTF-8",
            "1",
            "CAST(x'c328ff' AS TEXT)",
            Some(1),
        ),
    ] {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(&format!(
            "INSERT OR REPLACE INTO leader_records (name, version, value)
             VALUES ('nightly', {version}, {value})"
        ))
        .unwrap();
        drop(raw);
        let before = stored_record(&path, "nightly");
        let write = RecordWrite::new(&key, expected, "new").unwrap();
        let permanent = |result: Result<(), Error>| {
            let message = result.as_ref().err().map(ToString::to_string);
            checks::assert_backend_error(result, "nightly", false, "sqlite");
            let message = message.unwrap_or_default();
            assert!(message.contains("corrupted record"), "{case}: {message}");
        };
        permanent(LockBackend::read_record(&backend, &key).map(|_| ()));
        permanent(LockBackend::write_record(&backend, write).map(|_| ()));
        let smol = SmolRunner;
        permanent(
            smol.block_on(leader_core::AsyncLockBackend::read_record(&backend, &key))
                .map(|_| ()),
        );
        permanent(
            smol.block_on(leader_core::AsyncLockBackend::write_record(&backend, write))
                .map(|_| ()),
        );
        assert_eq!(
            stored_record(&path, "nightly"),
            before,
            "{case}: the record must stay as it was"
        );
    }
}
