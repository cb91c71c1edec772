//! Bad files are clear, typed errors, and nothing in them is lost: a path in a missing
//! directory, a file that is not a database, a database kept locked by another
//! connection, a read-only database, a table of the same name made by someone else.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use common::TempDir;
use leader_core::{AcquireRequest, Error, LockBackend, LockName, OwnerToken};
use leader_sqlite::{OpenError, SqliteBackend, SqliteConfig};

fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest::new(key, OwnerToken::random(), "node", Duration::from_secs(30))
}

#[test]
fn a_path_in_a_missing_directory_cannot_be_opened() {
    let dir = TempDir::new("missing");
    let path = dir.file("no/such/dir/locks.db");
    let err = SqliteBackend::open(&path).unwrap_err();
    assert!(matches!(err, OpenError::CannotOpen { .. }), "{err:?}");
    assert!(err.to_string().contains("no/such/dir/locks.db"), "{err}");
    assert!(!dir.file("no").exists(), "no directory was created");
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_as_it_was() {
    let dir = TempDir::new("corrupt");
    let path = dir.file("locks.db");
    let garbage = b"this is not an SQLite database, but someone's notes\n".repeat(200);
    std::fs::write(&path, &garbage).unwrap();
    let err = SqliteBackend::open(&path).unwrap_err();
    assert!(matches!(err, OpenError::NotADatabase { .. }), "{err:?}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        garbage,
        "the file is untouched"
    );
}

#[test]
fn a_table_of_the_same_name_made_by_someone_else_is_refused() {
    let dir = TempDir::new("foreign");
    let path = dir.file("app.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE leader_locks (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO leader_locks (note) VALUES ('mine');")
        .unwrap();
    let err = SqliteBackend::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            OpenError::ForeignTable {
                table: "leader_locks",
                ..
            }
        ),
        "{err:?}"
    );
    let note: String = conn
        .query_row("SELECT note FROM leader_locks", [], |row| row.get(0))
        .unwrap();
    assert_eq!(note, "mine");
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

/// The read-only check runs as an unprivileged user: root may write to any file.
#[test]
fn a_read_only_database_is_refused() {
    const CHILD: &str = "LEADER_SQLITE_READ_ONLY_DB";
    if let Some(path) = std::env::var_os(CHILD) {
        let err = SqliteBackend::open(&path).unwrap_err();
        assert!(matches!(err, OpenError::ReadOnly { .. }), "{err:?}");
        return;
    }
    let dir = TempDir::new("read-only");
    let path = dir.file("locks.db");
    drop(SqliteBackend::open(&path).unwrap());
    let before = std::fs::read(&path).unwrap();
    for (entry, mode) in [(path.as_path(), 0o444), (dir.path(), 0o555)] {
        std::fs::set_permissions(entry, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let args = ["--exact", "a_read_only_database_is_refused", "--nocapture"];
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
    let status = child.args(args).env(CHILD, &path).status().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(status.success(), "the unprivileged child failed: {status}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file is untouched"
    );
}
