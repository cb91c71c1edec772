//! A step of the wall clock moves no lease: a process whose wall clock jumped two hours
//! ahead (libfaketime with `FAKETIME=+2h`, its monotonic clocks left alone, as after an
//! NTP step or a `date -s`) finds a lock held by a process on the true clock held, and a
//! lease it leaves behind ends when its lease time has passed, not two hours later.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::TempDir;
use leader_core::{
    AcquireOutcome, AcquireRequest, LockBackend, LockName, LockStatus, OwnerToken, ReleaseOutcome,
    ReleaseRequest, Renewal,
};
use leader_rig::fixtures;
use leader_sqlite::SqliteBackend;

const CHILD: &str = "LEADER_SQLITE_STEPPED_CLOCK_DB";
const STEP: Duration = Duration::from_secs(2 * 3600);
const HELD: &str = "held-by-the-true-clock";
const LEFT: &str = "left-by-the-stepped-clock";
/// The lease the stepped process leaves behind.
const LEFT_LEASE: Duration = Duration::from_secs(2);

fn name(text: &str) -> LockName {
    LockName::new(text).unwrap()
}

fn unix_secs(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// The child, on the stepped clock: tries the held lock, then takes another and exits
/// without releasing it. Prints its wall clock and what it saw.
fn stepped(path: &Path) {
    let backend = SqliteBackend::open(path).unwrap();
    let wall = unix_secs(SystemTime::now());
    let key = name(HELD);
    let request = AcquireRequest::new(&key, OwnerToken::random(), "stepped", LEFT_LEASE);
    let outcome = match backend.try_acquire(request).unwrap() {
        AcquireOutcome::Acquired(_) => "acquired",
        _ => "held",
    };
    // The holder as this process sees it: its expiry on this process's (stepped) wall clock.
    let state = backend.state(&key).unwrap();
    let remaining = state
        .leader()
        .and_then(|holder| holder.expires_at.duration_since(SystemTime::now()).ok())
        .map_or(0, |left| left.as_secs());
    let left = name(LEFT);
    let request = AcquireRequest::new(&left, OwnerToken::random(), "stepped", LEFT_LEASE);
    assert!(matches!(
        backend.try_acquire(request).unwrap(),
        AcquireOutcome::Acquired(_)
    ));
    println!("wall={wall} outcome={outcome} remaining={remaining}");
}

/// Runs the child with `FAKETIME=+2h` and `FAKETIME_DONT_FAKE_MONOTONIC=1`; returns its
/// wall clock (Unix seconds), its outcome on the held lock, and the holder's remaining
/// lease as it saw it (seconds).
fn run_stepped(path: &Path, faketime: &Path) -> (u64, String, u64) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "clock::a_process_whose_wall_clock_jumped_ahead_takes_no_held_lock",
            "--nocapture",
        ])
        .env(CHILD, path)
        .env("LD_PRELOAD", faketime)
        .env("FAKETIME", "+2h")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the stepped child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout.lines().find(|l| l.starts_with("wall=")).unwrap();
    let mut fields = line.split(' ').map(|f| f.split_once('=').unwrap().1);
    let wall = fields.next().unwrap().parse().unwrap();
    let outcome = fields.next().unwrap().to_owned();
    let remaining = fields.next().unwrap().parse().unwrap();
    (wall, outcome, remaining)
}

#[test]
fn a_process_whose_wall_clock_jumped_ahead_takes_no_held_lock() {
    if let Some(path) = std::env::var_os(CHILD) {
        stepped(Path::new(&path));
        return;
    }
    let Some(faketime) = fixtures::faketime_library() else {
        return;
    };
    let dir = TempDir::new("clock-step");
    let path = dir.file("locks.db");
    let backend = SqliteBackend::open(&path).unwrap();
    let key = name(HELD);
    let lease = Duration::from_secs(60);
    let AcquireOutcome::Acquired(held) = backend
        .try_acquire(AcquireRequest::new(
            &key,
            OwnerToken::random(),
            "true-clock",
            lease,
        ))
        .unwrap()
    else {
        panic!("the lock is free");
    };

    let (wall, outcome, remaining) = run_stepped(&path, &faketime);
    let true_now = unix_secs(SystemTime::now());
    assert!(
        wall >= true_now + STEP.as_secs() - 60,
        "the child's wall clock was stepped: {wall} vs {true_now}"
    );
    assert_eq!(
        outcome, "held",
        "a process whose wall clock jumped ahead took a lock held by another"
    );
    assert!(
        (30..=60).contains(&remaining),
        "the stepped process sees the holder's lease end within its 60 s, on its own clock: {remaining} s"
    );
    assert_eq!(
        backend.state(&key).unwrap().leader().unwrap().fencing_token,
        held.fencing_token,
        "the holder is unchanged"
    );
    assert_eq!(
        backend
            .release(ReleaseRequest::new(&held, Duration::ZERO))
            .unwrap(),
        ReleaseOutcome::Released
    );

    // The lease the stepped process left ends after its lease time, on every clock.
    let left = name(LEFT);
    let state = backend.state(&left).unwrap();
    let expires_at = state
        .leader()
        .expect("the stepped child holds it")
        .expires_at;
    assert!(
        expires_at <= SystemTime::now() + LEFT_LEASE,
        "the stepped child's lease ends within its lease time here: {expires_at:?}"
    );
    let deadline = Instant::now() + LEFT_LEASE + Duration::from_secs(10);
    while backend.state(&left).unwrap().status() == LockStatus::Occupied {
        assert!(
            Instant::now() < deadline,
            "the stepped child's {LEFT_LEASE:?} lease was still held after {:?}",
            LEFT_LEASE + Duration::from_secs(10)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// After a reboot the monotonic clock starts again, and the holders of the boot before are
/// gone: a row written under another boot id has expired, whatever its expiry says. The
/// fencing counter survives, so the next token is still larger.
#[test]
fn a_lease_written_under_another_boot_has_expired() {
    let dir = TempDir::new("clock-reboot");
    let path = dir.file("locks.db");
    let backend = SqliteBackend::open(&path).unwrap();
    let key = name("before-the-reboot");
    let AcquireOutcome::Acquired(before) = backend
        .try_acquire(AcquireRequest::new(
            &key,
            OwnerToken::random(),
            "old-boot",
            Duration::from_secs(3600),
        ))
        .unwrap()
    else {
        panic!("the lock is free");
    };
    let conn = rusqlite::Connection::open(&path).unwrap();
    let changed = conn
        .execute(
            "UPDATE leader_locks SET boot_id = 'a-boot-before-this-one' WHERE name = ?1",
            [key.as_str()],
        )
        .unwrap();
    assert_eq!(changed, 1);

    assert_eq!(backend.state(&key).unwrap().status(), LockStatus::Empty);
    assert!(matches!(
        backend
            .extend(Renewal::new(&before, Duration::from_secs(60)))
            .unwrap(),
        leader_core::ExtendOutcome::NotHeld
    ));
    let AcquireOutcome::Acquired(after) = backend
        .try_acquire(AcquireRequest::new(
            &key,
            OwnerToken::random(),
            "new-boot",
            Duration::from_secs(60),
        ))
        .unwrap()
    else {
        panic!("a lease of another boot has expired");
    };
    assert!(after.fencing_token > before.fencing_token);
}
