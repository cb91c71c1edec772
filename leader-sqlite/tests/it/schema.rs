//! A file of schema version 1 (times on the wall clock, in `acquired_at` / `expires_at`)
//! keeps working: it is migrated when opened, each lease keeping the time it had left,
//! its holder and its fencing token, and the counters untouched. A process still running
//! version 1 on the file fails closed: its statements name columns that are gone.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::TempDir;
use leader_core::{
    AcquireOutcome, AcquireRequest, ExtendOutcome, Lease, LockBackend, LockName, LockStatus,
    OwnerToken, Renewal,
};
use leader_sqlite::SqliteBackend;
use rusqlite::{Connection, params};

/// The tables as version 1 made them.
const VERSION_1: &str = "
    CREATE TABLE leader_locks (
        name TEXT PRIMARY KEY NOT NULL,
        owner TEXT,
        leader_id TEXT NOT NULL,
        fencing_token INTEGER NOT NULL,
        acquired_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE leader_fences (
        name TEXT PRIMARY KEY NOT NULL,
        last_token INTEGER NOT NULL
    ) WITHOUT ROWID;";

fn wall_micros(at: SystemTime) -> i64 {
    i64::try_from(at.duration_since(UNIX_EPOCH).unwrap().as_micros()).unwrap()
}

fn name(text: &str) -> LockName {
    LockName::new(text).unwrap()
}

fn near(actual: SystemTime, expected: SystemTime) -> bool {
    let diff = actual
        .duration_since(expected)
        .unwrap_or_else(|e| e.duration());
    diff < Duration::from_secs(3)
}

#[test]
fn a_version_1_file_is_migrated_with_every_lease_as_it_was() {
    let dir = TempDir::new("migrate");
    let path = dir.file("locks.db");
    let old = Connection::open(&path).unwrap();
    old.execute_batch(VERSION_1).unwrap();
    let now = SystemTime::now();
    let us = |offset: i64| wall_micros(now) + offset;
    let owner = OwnerToken::random();
    // Counters far above the wall clock, so a new token must come from them.
    let counter = us(3_600_000_000_000);
    for (key, row_owner, token, acquired, expires) in [
        (
            "live",
            Some(owner.to_string()),
            counter,
            us(-10_000_000),
            us(60_000_000),
        ),
        (
            "expired",
            Some(OwnerToken::random().to_string()),
            counter,
            us(-90_000_000),
            us(-1_000_000),
        ),
        ("free", None, counter, us(-90_000_000), us(-80_000_000)),
        (
            "kept",
            Some("released".to_owned()),
            counter,
            us(-5_000_000),
            us(30_000_000),
        ),
        (
            "forever",
            Some(OwnerToken::random().to_string()),
            counter,
            us(-5_000_000),
            i64::MAX,
        ),
    ] {
        old.execute(
            "INSERT INTO leader_locks VALUES (?1, ?2, 'old-node', ?3, ?4, ?5)",
            params![key, row_owner, token, acquired, expires],
        )
        .unwrap();
        old.execute(
            "INSERT INTO leader_fences VALUES (?1, ?2)",
            params![key, token],
        )
        .unwrap();
    }
    // A process of version 1 with the file open: its renewal is prepared already.
    let mut renewal = old
        .prepare("UPDATE leader_locks SET expires_at = ?1 WHERE name = 'live'")
        .unwrap();

    let backend = SqliteBackend::open(&path).unwrap();

    let live = backend.state(&name("live")).unwrap();
    let holder = live
        .leader()
        .expect("the live lease survives the migration");
    assert_eq!(holder.leader_id, "old-node");
    assert_eq!(holder.fencing_token, u64::try_from(counter).unwrap());
    assert!(
        near(holder.expires_at, now + Duration::from_secs(60)),
        "the lease keeps the time it had left: {:?}",
        holder.expires_at
    );
    assert!(near(holder.acquired_at, now - Duration::from_secs(10)));
    for (key, status) in [
        ("expired", LockStatus::Empty),
        ("free", LockStatus::Empty),
        ("kept", LockStatus::Occupied),
        ("forever", LockStatus::Occupied),
    ] {
        assert_eq!(backend.state(&name(key)).unwrap().status(), status, "{key}");
    }

    // The holder's renewal still finds its lease, by its owner token.
    let lease = Lease::new(
        name("live"),
        owner,
        "old-node",
        holder.fencing_token,
        holder.acquired_at,
        holder.expires_at,
    );
    assert!(matches!(
        backend
            .extend(Renewal::new(&lease, Duration::from_secs(30)))
            .unwrap(),
        ExtendOutcome::Extended { .. }
    ));
    // A new holder of an expired lock gets a token above the kept counter.
    let key = name("expired");
    let request = AcquireRequest::new(
        &key,
        OwnerToken::random(),
        "new-node",
        Duration::from_secs(30),
    );
    let AcquireOutcome::Acquired(taken) = backend.try_acquire(request).unwrap() else {
        panic!("an expired lock is free after the migration");
    };
    assert_eq!(taken.fencing_token, u64::try_from(counter + 1).unwrap());

    // Version 1's statement now fails, instead of writing a time nobody reads.
    let err = renewal.execute([us(0)]).unwrap_err();
    assert!(err.to_string().contains("expires_at"), "{err}");

    // Opened again, the file is as the first open left it.
    drop(backend);
    let again = SqliteBackend::open(&path).unwrap();
    let holder = again.state(&name("live")).unwrap();
    assert_eq!(
        holder.leader().unwrap().fencing_token,
        u64::try_from(counter).unwrap()
    );
}
