//! Fencing tokens never go back, even when Redis loses data — a counter set
//! back or deleted, and a real restart on an older snapshot.

use crate::common;

use std::time::Duration;

use crate::common::RedisHarness;
use leader_core::{
    AcquireOutcome, AcquireRequest, Lease, LockBackend, LockName, OwnerToken, ReleaseRequest,
};
use leader_redis::RedisBackend;
use leader_rig::fixtures::Data;
use leader_testkit::fresh_name;

/// Acquires and releases `key` once; the token of that acquisition.
fn cycle(backend: &RedisBackend, key: &LockName) -> u64 {
    let request = AcquireRequest::new(key, OwnerToken::random(), "node", Duration::from_secs(30));
    let lease: Lease = match LockBackend::try_acquire(backend, request).unwrap() {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("expected to acquire {key}, got {other:?}"),
    };
    LockBackend::release(backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    lease.fencing_token
}

/// Runs `n` cycles, checking each token is above every earlier one.
fn cycles(backend: &RedisBackend, key: &LockName, n: usize, seen: &mut Vec<u64>) {
    for _ in 0..n {
        let token = cycle(backend, key);
        let highest = seen.iter().copied().max().unwrap_or(0);
        assert!(token > highest, "token {token} after {seen:?}");
        seen.push(token);
    }
}

fn fence_key(backend: &RedisBackend, key: &LockName) -> String {
    format!("{}:fence", backend.lock_key(key))
}

#[test]
fn a_counter_set_back_or_deleted_never_makes_a_token_go_back() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut raw = harness.raw();
    let key = fresh_name("fence-back");
    let mut seen = Vec::new();
    cycles(&backend, &key, 3, &mut seen);

    // An operator (or a restore) sets the counter back.
    let _: () = redis::cmd("SET")
        .arg(fence_key(&backend, &key))
        .arg(5)
        .query(&mut raw)
        .unwrap();
    cycles(&backend, &key, 3, &mut seen);

    // ... or deletes it.
    let _: () = redis::cmd("DEL")
        .arg(fence_key(&backend, &key))
        .query(&mut raw)
        .unwrap();
    cycles(&backend, &key, 3, &mut seen);
}

#[test]
fn a_counter_ahead_of_the_clock_is_followed() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut raw = harness.raw();
    let key = fresh_name("fence-ahead");
    let mut seen = Vec::new();
    cycles(&backend, &key, 2, &mut seen);

    // The server's clock went back (or tokens were handed out by a faster clock): the
    // counter is ahead of TIME, so the next tokens count on from it, one by one.
    let ahead = seen[1] + 3_600_000_000;
    let _: () = redis::cmd("SET")
        .arg(fence_key(&backend, &key))
        .arg(ahead)
        .query(&mut raw)
        .unwrap();
    assert_eq!(cycle(&backend, &key), ahead + 1);
    assert_eq!(cycle(&backend, &key), ahead + 2);
    let counter: u64 = redis::cmd("GET")
        .arg(fence_key(&backend, &key))
        .query(&mut raw)
        .unwrap();
    assert_eq!(counter, ahead + 2, "the counter holds the last token");
}

#[test]
fn a_counter_that_is_not_a_token_is_reported_and_kept() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut raw = harness.raw();
    for garbage in ["twelve", "1.7e+15", "-5", "99999999999999999999"] {
        let key = fresh_name("fence-garbage");
        let _: () = redis::cmd("SET")
            .arg(fence_key(&backend, &key))
            .arg(garbage)
            .query(&mut raw)
            .unwrap();
        let request =
            AcquireRequest::new(&key, OwnerToken::random(), "node", Duration::from_secs(30));
        let err = LockBackend::try_acquire(&backend, request).unwrap_err();
        assert!(!err.is_transient(), "{err}");
        assert!(err.to_string().contains("not a token"), "{err}");
        let kept: String = redis::cmd("GET")
            .arg(fence_key(&backend, &key))
            .query(&mut raw)
            .unwrap();
        assert_eq!(kept, garbage, "the counter is left as it was");
        let holder: Option<String> = redis::cmd("HGET")
            .arg(backend.lock_key(&key))
            .arg("owner")
            .query(&mut raw)
            .unwrap();
        assert_eq!(holder, None, "nothing was taken");
    }
}

#[test]
fn a_restart_on_an_older_snapshot_never_makes_a_token_go_back() {
    let Some(mut server) = common::private_server() else {
        return;
    };
    let backend = RedisBackend::connect(&server.url()).unwrap();
    let key = fresh_name("fence-rollback");
    let mut seen = Vec::new();
    cycles(&backend, &key, 3, &mut seen);
    let mut raw = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("SAVE").query(&mut raw).unwrap();
    cycles(&backend, &key, 3, &mut seen);

    // kill -9: the last three acquisitions are lost, the counter comes back behind.
    server.kill();
    server.restart(Data::Keep).unwrap();
    let mut raw = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let restored: u64 = redis::cmd("GET")
        .arg(fence_key(&backend, &key))
        .query(&mut raw)
        .unwrap();
    assert_eq!(restored, seen[2], "the snapshot holds the older counter");
    cycles(&backend, &key, 3, &mut seen);
}
