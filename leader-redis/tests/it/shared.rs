//! Read/write locks beyond the contract suite (`contract_*::shared::`): one script per
//! call, counted on a server of the test's own; a record the library did not write is a
//! typed error and left as it is; tokens keep growing when the counter is lost; a release
//! a waiter marked is published, one nobody waits for is not; listings never see them.

use std::time::Duration;

use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, BackendErrorKind, Error, ExtendOutcome, Lease,
    ListRequest, LockBackend, LockName, MaxReaders, OwnerToken, ReleaseOutcome, ReleaseRequest,
    Renewal, Role, SharedLockBackend, SharedOutcome, SharedRequest,
};
use leader_redis::RedisBackend;
use leader_testkit::fresh_name;

use crate::common::{self, RedisHarness};

const LEASE: Duration = Duration::from_secs(30);

fn ask<'a>(key: &'a LockName, role: Role) -> SharedRequest<'a> {
    SharedRequest::new(
        AcquireRequest::new(key, OwnerToken::random(), "node-a", LEASE),
        role,
        MaxReaders::DEFAULT,
    )
}

#[track_caller]
fn granted(outcome: Result<SharedOutcome, Error>) -> Lease {
    match outcome {
        Ok(SharedOutcome::Acquired(lease)) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// How many times the server ran `command` (`INFO commandstats`).
fn calls(conn: &mut redis::Connection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap();
    let head = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(&head)?.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn each_call_is_one_script_and_an_uncontended_acquire_one_round_trip() {
    let Some(server) = common::private_server() else {
        return;
    };
    let backend = RedisBackend::connect(&server.url()).unwrap();
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let key = fresh_name("rw-one-script");
    // Load the scripts first: a first call on a fresh server loads its script (a second
    // EVALSHA after the NOSCRIPT answer).
    let warm = fresh_name("rw-warm");
    let lease = granted(backend.try_acquire_shared(ask(&warm, Role::Write)));
    backend
        .extend_shared(Renewal::new(&lease, LEASE), Role::Write)
        .unwrap();
    backend.state_shared(&warm).unwrap();
    backend
        .release_shared(ReleaseRequest::new(&lease, Duration::ZERO), Role::Write)
        .unwrap();

    let before = calls(&mut conn, "evalsha");
    let reader = granted(backend.try_acquire_shared(ask(&key, Role::Read)));
    assert_eq!(calls(&mut conn, "evalsha") - before, 1, "a read acquire");
    let other = fresh_name("rw-one-script");
    let writer = granted(backend.try_acquire_shared(ask(&other, Role::Write)));
    assert_eq!(calls(&mut conn, "evalsha") - before, 2, "a write acquire");
    assert!(matches!(
        backend.extend_shared(Renewal::new(&reader, LEASE), Role::Read),
        Ok(ExtendOutcome::Extended { .. })
    ));
    assert_eq!(backend.state_shared(&key).unwrap().readers.len(), 1);
    for (lease, role) in [(&reader, Role::Read), (&writer, Role::Write)] {
        let released = backend.release_shared(ReleaseRequest::new(lease, Duration::ZERO), role);
        assert_eq!(released.unwrap(), ReleaseOutcome::Released);
    }
    assert_eq!(
        calls(&mut conn, "evalsha") - before,
        6,
        "two acquires, an extend, a state, two releases"
    );
    // Nobody waited: no release was published.
    assert_eq!(calls(&mut conn, "publish"), 0);
}

/// A permanent error naming the read/write lock's key and saying its record is corrupted.
#[track_caller]
fn corrupted<T: std::fmt::Debug>(answer: Result<T, Error>, backend: &RedisBackend, key: &LockName) {
    match answer {
        Err(Error::Backend(err)) => {
            assert_eq!(err.kind(), BackendErrorKind::Permanent, "{err}");
            assert_eq!(err.key(), backend.shared_key(key));
            assert!(
                err.to_string().contains("corrupted read/write lock record"),
                "{err}"
            );
        }
        other => panic!("expected a corrupted record's error, got {other:?}"),
    }
}

#[test]
fn a_record_the_library_did_not_write_is_a_typed_error_and_left_as_it_is() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut conn = harness.raw();
    // What is planted: a string (`Some`), or a hash (`None`).
    let planted = [
        ("not JSON", Some("{oops")),
        (
            "a reader without a token",
            Some(r#"{"r":[{"o":"ab","n":"x","a":"1","e":"2","sa":"1","se":"99999999999999999"}]}"#),
        ),
        ("a writer that is a string", Some(r#"{"w":"me"}"#)),
        ("a hash", None),
    ];
    for (what, value) in planted {
        let key = fresh_name("rw-corrupt");
        let redis_key = backend.shared_key(&key);
        match value {
            Some(value) => redis::cmd("SET").arg(&redis_key).arg(value).exec(&mut conn),
            None => redis::cmd("HSET")
                .arg(&redis_key)
                .arg("owner")
                .arg("x")
                .exec(&mut conn),
        }
        .unwrap();
        let dump = |conn: &mut redis::Connection| -> Vec<u8> {
            redis::cmd("DUMP").arg(&redis_key).query(conn).unwrap()
        };
        let before = dump(&mut conn);
        for role in [Role::Read, Role::Write] {
            corrupted(backend.try_acquire_shared(ask(&key, role)), &backend, &key);
        }
        let lease = Lease::new(
            key.clone(),
            OwnerToken::random(),
            "n",
            1,
            std::time::SystemTime::now(),
            std::time::SystemTime::now(),
        );
        corrupted(
            backend.extend_shared(Renewal::new(&lease, LEASE), Role::Read),
            &backend,
            &key,
        );
        corrupted(
            backend.release_shared(ReleaseRequest::new(&lease, Duration::ZERO), Role::Write),
            &backend,
            &key,
        );
        corrupted(backend.state_shared(&key), &backend, &key);
        assert_eq!(
            dump(&mut conn),
            before,
            "{what}: the record is left as it was"
        );
        // The exclusive lock of the name is another key: untouched by the planted one.
        let exclusive = AcquireRequest::new(&key, OwnerToken::random(), "n", LEASE);
        assert!(matches!(
            LockBackend::try_acquire(&backend, exclusive),
            Ok(AcquireOutcome::Acquired(_))
        ));
    }
}

#[test]
fn tokens_keep_growing_when_the_counter_is_lost_or_ahead_of_the_clock() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut conn = harness.raw();
    let key = fresh_name("rw-counter");
    let counter = format!("{}:fence", backend.shared_key(&key));
    let first = granted(backend.try_acquire_shared(ask(&key, Role::Write)));
    backend
        .release_shared(ReleaseRequest::new(&first, Duration::ZERO), Role::Write)
        .unwrap();
    // Data loss: the counter (and the record) gone. The server's clock floors the token.
    redis::cmd("DEL")
        .arg(&counter)
        .arg(backend.shared_key(&key))
        .exec(&mut conn)
        .unwrap();
    let second = granted(backend.try_acquire_shared(ask(&key, Role::Read)));
    assert!(second.fencing_token > first.fencing_token);
    let server_us = common::server_time(&mut conn)
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    assert!(
        second.fencing_token <= server_us,
        "floored at the server's clock"
    );
    // A counter ahead of the clock (the clock went back): the next token follows it.
    let ahead = server_us + 3_600_000_000;
    redis::cmd("SET")
        .arg(&counter)
        .arg(ahead)
        .exec(&mut conn)
        .unwrap();
    let third = granted(backend.try_acquire_shared(ask(&key, Role::Read)));
    assert_eq!(third.fencing_token, ahead + 1);
    // The exclusive lock's counter is its own.
    let exclusive = AcquireRequest::new(&key, OwnerToken::random(), "n", LEASE);
    match LockBackend::try_acquire(&backend, exclusive).unwrap() {
        AcquireOutcome::Acquired(lease) => assert!(lease.fencing_token < ahead),
        other => panic!("{other:?}"),
    }
}

/// A waiter of another backend listens on `key` before it tries; its refusal (held, or a
/// writer queued) marks the record, and the release that frees a hold is published with
/// the lock's name and no token (a read/write lock's tokens are no exclusive holder's).
fn a_marked_release_wakes_the_waiter(harness: RedisHarness) {
    let holder = harness.make();
    let waiter = harness.make();
    common::subscribed(&waiter);
    let events = waiter.release_events().unwrap();
    let key = fresh_name("rw-wake");

    let writer = granted(holder.try_acquire_shared(ask(&key, Role::Write)));
    let listener = events.listen(key.as_str());
    let refused = waiter.try_acquire_shared(ask(&key, Role::Read)).unwrap();
    assert!(matches!(refused, SharedOutcome::Held(_)), "{refused:?}");
    holder
        .release_shared(ReleaseRequest::new(&writer, Duration::ZERO), Role::Write)
        .unwrap();
    let notice = listener
        .wait_notice_timeout(Duration::from_secs(5))
        .expect("the writer's release wakes the reader waiting for it");
    assert_eq!(
        (notice.key(), notice.fencing_token()),
        (Some(key.as_str()), None)
    );

    // A writer queued behind a reader is woken when the reader leaves.
    let reader = granted(holder.try_acquire_shared(ask(&key, Role::Read)));
    let listener = events.listen(key.as_str());
    let queued = waiter.try_acquire_shared(ask(&key, Role::Write)).unwrap();
    assert!(matches!(queued, SharedOutcome::Queued(_)), "{queued:?}");
    holder
        .release_shared(ReleaseRequest::new(&reader, Duration::ZERO), Role::Read)
        .unwrap();
    let notice = listener
        .wait_notice_timeout(Duration::from_secs(5))
        .expect("the reader's release wakes the queued writer");
    assert_eq!(
        (notice.key(), notice.fencing_token()),
        (Some(key.as_str()), None)
    );
}

#[test]
fn a_release_a_waiter_marked_wakes_it() {
    if let Some(harness) = RedisHarness::standalone() {
        a_marked_release_wakes_the_waiter(harness);
    }
}

#[test]
fn a_release_a_waiter_marked_wakes_it_on_a_cluster() {
    if let Some(harness) = RedisHarness::cluster() {
        a_marked_release_wakes_the_waiter(harness);
    }
}

#[test]
fn listings_never_show_read_write_locks() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let key = fresh_name("rw-listed");
    granted(backend.try_acquire_shared(ask(&key, Role::Read)));
    let page = LockBackend::list(&backend, &ListRequest::new(key.as_str())).unwrap();
    assert!(page.locks.is_empty(), "{page:?}");
    let exclusive = AcquireRequest::new(&key, OwnerToken::random(), "n", LEASE);
    LockBackend::try_acquire(&backend, exclusive).unwrap();
    let page = LockBackend::list(&backend, &ListRequest::new(key.as_str())).unwrap();
    assert_eq!(page.locks.len(), 1, "{page:?}");
    assert!(
        LockBackend::state(&backend, &key)
            .unwrap()
            .leader()
            .is_some()
    );
}
