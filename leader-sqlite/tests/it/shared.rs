//! Read/write locks on the file, beyond the contract suite: a record of another boot has
//! expired, a record garbled by hand is a permanent error and stays as it was, and a file
//! of an earlier release gets the tables when opened, and connections of their own (as
//! processes have) racing for one name have one winner.

use std::time::Duration;

use crate::common::TempDir;
use leader_core::{
    AcquireRequest, Error, Lease, LockName, MaxReaders, OwnerToken, ReleaseRequest, Renewal, Role,
    SharedLockBackend, SharedOutcome, SharedRequest,
};
use leader_sqlite::SqliteBackend;
use leader_testkit::checks;
use rusqlite::Connection;

const LEASE: Duration = Duration::from_secs(60);

fn ask(backend: &SqliteBackend, key: &LockName, role: Role, node: &str) -> SharedOutcome {
    let request = AcquireRequest::new(key, OwnerToken::random(), node, LEASE);
    backend
        .try_acquire_shared(SharedRequest::new(request, role, MaxReaders::DEFAULT))
        .unwrap()
}

fn granted(outcome: SharedOutcome) -> Lease {
    match outcome {
        SharedOutcome::Acquired(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// The rows of `key` in both tables, as text, to compare before and after.
fn rows(path: &std::path::Path, key: &str) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut out = Vec::new();
    for sql in [
        "SELECT quote(last_token) || quote(boot_id) || quote(intent_owner) ||
             quote(intent_leader_id) || quote(intent_expires_us) FROM leader_rw WHERE name = ?1",
        "SELECT quote(fencing_token) || quote(role) || quote(owner) || quote(leader_id) ||
             quote(acquired_us) || quote(expires_us) || quote(released)
         FROM leader_rw_holders WHERE name = ?1 ORDER BY fencing_token",
    ] {
        let mut statement = conn.prepare(sql).unwrap();
        let found = statement
            .query_map([key], |row| row.get::<_, String>(0))
            .unwrap();
        out.extend(found.map(Result::unwrap));
    }
    out
}

/// The monotonic clock starts again at each boot: holders and an intent written under
/// another boot have expired (their processes did not survive it), and the counter stays,
/// so the next token is above theirs.
#[test]
fn a_record_of_another_boot_has_no_holders_and_keeps_its_counter() {
    let dir = TempDir::new("rw-boot");
    let path = dir.file("locks.db");
    let backend = SqliteBackend::open(&path).unwrap();
    let key = LockName::new("reports").unwrap();
    let reader = granted(ask(&backend, &key, Role::Read, "reader"));
    assert!(matches!(
        ask(&backend, &key, Role::Write, "writer"),
        SharedOutcome::Queued(_)
    ));
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE leader_rw SET boot_id = 'a-boot-before-this-one' WHERE name = ?1",
            [key.as_str()],
        )
        .unwrap();
    assert!(
        backend.state_shared(&key).unwrap().is_free(),
        "no holder or intent of another boot is reported"
    );
    let writer = granted(ask(&backend, &key, Role::Write, "after-reboot"));
    assert!(writer.fencing_token > reader.fencing_token);
    assert_eq!(
        backend
            .extend_shared(Renewal::new(&reader, LEASE), Role::Read)
            .unwrap(),
        leader_core::ExtendOutcome::NotHeld,
        "the reader of the boot before cannot renew"
    );
    let seen = backend.state_shared(&key).unwrap();
    assert!(seen.readers.is_empty() && seen.writer.is_some(), "{seen:?}");
    assert_eq!(
        rows(&path, key.as_str()).len(),
        2,
        "the old reader's row went with the write: one row and the writer's"
    );
}

/// Values this backend never writes, planted by hand: every call on the lock is a
/// permanent error naming it, and nothing is rewritten.
#[test]
fn a_garbled_read_write_record_is_a_permanent_error_and_stays_as_it_was() {
    let dir = TempDir::new("rw-garbled");
    let path = dir.file("locks.db");
    let backend = SqliteBackend::open(&path).unwrap();
    let key = LockName::new("garbled").unwrap();
    for (case, sql) in [
        (
            "a role other than read or write",
            "UPDATE leader_rw_holders SET role = 'admin'",
        ),
        (
            "a negative fencing token",
            "UPDATE leader_rw_holders SET fencing_token = -3",
        ),
        (
            "an owner that is no token",
            "UPDATE leader_rw_holders SET owner = 'somebody'",
        ),
        (
            "a released flag of 2",
            "UPDATE leader_rw_holders SET released = 2",
        ),
        (
            "a time that is text",
            "UPDATE leader_rw_holders SET expires_us = 'soon'",
        ),
        (
            "half an intent",
            "UPDATE leader_rw SET intent_leader_id = 'w'",
        ),
        (
            "a counter that is text",
            "UPDATE leader_rw SET last_token = 'x'",
        ),
        (
            "a token above the counter",
            "UPDATE leader_rw_holders SET fencing_token = fencing_token + 1000000000",
        ),
        ("holders without the lock's row", "DELETE FROM leader_rw"),
        (
            "two writers",
            "INSERT INTO leader_rw_holders
                 SELECT name, fencing_token - 1, 'write', owner, leader_id, acquired_us,
                     expires_us, 0
                 FROM leader_rw_holders",
        ),
    ] {
        let raw = Connection::open(&path).unwrap();
        raw.execute_batch("DELETE FROM leader_rw; DELETE FROM leader_rw_holders;")
            .unwrap();
        let writer = granted(ask(&backend, &key, Role::Write, "w"));
        raw.execute_batch(sql).unwrap();
        drop(raw);
        let before = rows(&path, key.as_str());
        let permanent = |result: Result<(), Error>| {
            let message = result.as_ref().err().map(ToString::to_string);
            checks::assert_backend_error(result, "garbled", false, "sqlite");
            let message = message.unwrap_or_default();
            assert!(
                message.contains("corrupted lock record"),
                "{case}: {message}"
            );
        };
        for role in [Role::Read, Role::Write] {
            let request = AcquireRequest::new(&key, OwnerToken::random(), "n", LEASE);
            let request = SharedRequest::new(request, role, MaxReaders::DEFAULT);
            permanent(backend.try_acquire_shared(request).map(|_| ()));
            permanent(
                backend
                    .extend_shared(Renewal::new(&writer, LEASE), role)
                    .map(|_| ()),
            );
            permanent(
                backend
                    .release_shared(ReleaseRequest::new(&writer, Duration::ZERO), role)
                    .map(|_| ()),
            );
        }
        permanent(backend.state_shared(&key).map(|_| ()));
        assert_eq!(
            rows(&path, key.as_str()),
            before,
            "{case}: the record must stay as it was"
        );
    }
}

/// A file made by a release without read/write locks (the current lock tables, no
/// `leader_rw` tables) gets them when opened, its locks untouched.
#[test]
fn a_file_without_the_read_write_tables_gets_them() {
    let dir = TempDir::new("rw-added");
    let path = dir.file("locks.db");
    let key = LockName::new("job").unwrap();
    {
        let backend = SqliteBackend::open(&path).unwrap();
        let request = AcquireRequest::new(&key, OwnerToken::random(), "old", LEASE);
        assert!(matches!(
            leader_core::LockBackend::try_acquire(&backend, request).unwrap(),
            leader_core::AcquireOutcome::Acquired(_)
        ));
    }
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE leader_rw; DROP TABLE leader_rw_holders;")
        .unwrap();
    let backend = SqliteBackend::open(&path).unwrap();
    assert!(
        leader_core::LockBackend::state(&backend, &key)
            .unwrap()
            .leader()
            .is_some_and(|h| h.leader_id == "old")
    );
    granted(ask(&backend, &key, Role::Read, "r"));
}

/// Backends of their own (connections of their own, as other processes have) racing for
/// one name: each call's `BEGIN IMMEDIATE` serialises them on the file, so exactly one
/// writer wins, and then every reader is held.
#[test]
fn writers_on_separate_connections_have_one_winner() {
    let dir = TempDir::new("rw-race");
    let path = dir.file("locks.db");
    let backends: Vec<SqliteBackend> = (0..8)
        .map(|_| SqliteBackend::open(&path).unwrap())
        .collect();
    for round in 0..20 {
        let key = LockName::new(format!("race-{round}")).unwrap();
        let barrier = std::sync::Barrier::new(backends.len());
        let outcomes: Vec<SharedOutcome> = std::thread::scope(|scope| {
            let racers: Vec<_> = backends
                .iter()
                .map(|backend| {
                    let (key, barrier) = (&key, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        ask(backend, key, Role::Write, "racer")
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let winners = outcomes
            .iter()
            .filter(|o| matches!(o, SharedOutcome::Acquired(_)))
            .count();
        assert_eq!(winners, 1, "round {round}: {outcomes:?}");
        assert!(matches!(
            ask(&backends[0], &key, Role::Read, "late"),
            SharedOutcome::Held(_)
        ));
    }
}
