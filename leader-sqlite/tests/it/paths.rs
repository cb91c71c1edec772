//! Paths that would open a database other processes cannot share, or one without SQLite's
//! file locking, are refused with a typed error before anything is opened or created: an
//! in-memory database, a private temporary one, and `file:` URIs with `mode=memory`,
//! `nolock`, `immutable` or `vfs=`. An ordinary `file:` URI still works.

use std::time::Duration;

use crate::common::TempDir;
use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken};
use leader_sqlite::{ConnectError, SqliteBackend};

fn refused(path: &str) -> ConnectError {
    match SqliteBackend::open(path) {
        Ok(backend) => {
            panic!("`{path}` was opened as {backend:?}: it loses cross-process exclusion")
        }
        Err(err) => err,
    }
}

#[test]
fn in_memory_and_lock_free_forms_are_refused() {
    let dir = TempDir::new("paths");
    let file = dir.file("locks.db");
    let file = file.display();
    let forms = [
        ":memory:".to_owned(),
        String::new(),
        "file::memory:".to_owned(),
        "file::memory:?cache=shared".to_owned(),
        "file:".to_owned(),
        format!("file:{file}?mode=memory"),
        format!("file:{file}?cache=shared&mode=memory"),
        format!("file:{file}?mode=mem%6Fry"),
        format!("file:{file}?mode=MEMORY"),
        format!("file:{file}?nolock=1"),
        format!("file:{file}?nolock=yes"),
        format!("file:{file}?nolock=on"),
        format!("file:{file}?nolock"),
        format!("file:{file}?%6Eolock=1"),
        format!("file:{file}?immutable=1"),
        format!("file:{file}?immutable=true"),
        format!("file:{file}?vfs=unix-none"),
        format!("file:{file}?vfs=unix-dotfile"),
        format!("file:{file}?vfs=memdb"),
        format!("file://localhost{file}?nolock=1"),
    ];
    for form in &forms {
        let err = refused(form);
        assert!(
            matches!(&err, ConnectError::NotShared { .. }),
            "`{form}`: {err:?}"
        );
        assert!(err.to_string().contains(form.as_str()), "{err}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was created"
    );
}

#[test]
fn an_ordinary_file_uri_is_one_shared_database() {
    let dir = TempDir::new("uri");
    let file = dir.file("locks.db");
    let file = file.display();
    let first = SqliteBackend::open(format!("file:{file}?mode=rwc&nolock=0")).unwrap();
    let second = SqliteBackend::open(format!("file:{file}?cache=private&immutable=off")).unwrap();
    let key = LockName::new("uri").unwrap();
    let request = |owner| AcquireRequest::new(&key, owner, "node", Duration::from_secs(30));
    assert!(matches!(
        first.try_acquire(request(OwnerToken::random())).unwrap(),
        AcquireOutcome::Acquired(_)
    ));
    assert!(
        matches!(
            second.try_acquire(request(OwnerToken::random())).unwrap(),
            AcquireOutcome::Held(_)
        ),
        "both URIs name one database, with its locks"
    );
    assert!(dir.file("locks.db").is_file());
}
