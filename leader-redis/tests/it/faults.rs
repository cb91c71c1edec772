//! Faults: a server that dies while a lease is held (and comes back), foreign data at a
//! lock key, corrupted records (of locks, and of the records beside them), key prefixes,
//! and bad URLs.

use crate::common;

use std::time::{Duration, Instant, SystemTime};

use crate::common::RedisHarness;
use leader_core::{
    AcquireOutcome, AcquireRequest, BackendErrorKind, Error, ForceReleaseOutcome,
    LeaderElectionOptions, Lease, ListRequest, LockBackend, LockName, LockStatus, OwnerToken,
    RecordWrite, ReleaseOutcome, ReleaseRequest, Renewal,
};
use leader_redis::{ConnectError, RedisBackend, RedisConfig};
use leader_rig::fixtures::Data;
use leader_testkit::fresh_name;

const TIMEOUT: Duration = Duration::from_millis(500);

fn fast_config() -> RedisConfig {
    RedisConfig::default()
        .with_connect_timeout(TIMEOUT)
        .with_response_timeout(TIMEOUT)
}

fn request<'a>(key: &'a LockName, owner: OwnerToken) -> AcquireRequest<'a> {
    AcquireRequest::new(key, owner, "node-a", Duration::from_secs(30))
}

fn must_acquire(backend: &RedisBackend, key: &LockName) -> Lease {
    match LockBackend::try_acquire(backend, request(key, OwnerToken::random())).unwrap() {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("expected to acquire, got {other:?}"),
    }
}

/// A backend error naming the lock's Redis key, of the given kind.
#[track_caller]
fn assert_backend_error<T: std::fmt::Debug>(
    result: Result<T, Error>,
    backend: &RedisBackend,
    key: &LockName,
    kind: BackendErrorKind,
) -> String {
    match result {
        Err(Error::Backend(err)) => {
            assert_eq!(err.backend(), "redis");
            assert_eq!(err.key(), backend.lock_key(key));
            assert_eq!(err.kind(), kind, "{err}");
            let text = err.to_string();
            eprintln!("{text}");
            assert!(text.contains(key.as_str()), "{text}");
            text
        }
        other => panic!("expected a {kind:?} backend error, got {other:?}"),
    }
}

#[test]
fn a_dead_server_fails_closed_in_time_and_the_same_backend_recovers() {
    let Some(mut server) = common::private_server() else {
        return;
    };
    let backend = RedisBackend::connect_with(&server.url(), fast_config()).unwrap();
    let key = fresh_name("fault");
    let lease = must_acquire(&backend, &key);

    server.kill();
    let started = Instant::now();
    let extended = LockBackend::extend(&backend, Renewal::new(&lease, Duration::from_secs(30)));
    assert_backend_error(extended, &backend, &key, BackendErrorKind::Transient);
    let acquired = LockBackend::try_acquire(&backend, request(&key, OwnerToken::random()));
    assert_backend_error(acquired, &backend, &key, BackendErrorKind::Transient);
    let released = LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO));
    assert_backend_error(released, &backend, &key, BackendErrorKind::Transient);
    let state = LockBackend::state(&backend, &key);
    assert_backend_error(state, &backend, &key, BackendErrorKind::Transient);
    assert!(
        started.elapsed() < 4 * (TIMEOUT + TIMEOUT),
        "four calls took {:?}",
        started.elapsed()
    );

    // An elector on the dead server fails closed: an error, and the action never runs.
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = leader_blocking::LeaderElector::new(backend.clone(), options).unwrap();
    let started = Instant::now();
    let outcome = elector.run_if_leader(key.as_str(), || panic!("the action must not run"));
    let err = outcome.expect_err("an unreachable server is an error");
    assert!(err.is_transient(), "{err}");
    assert!(started.elapsed() < 2 * (TIMEOUT + TIMEOUT));

    // Same port, no data (persistence is off): the same backend reconnects, and the
    // fencing counter, re-seeded from the server's clock, still grows.
    server.restart(Data::Keep).unwrap();
    let again = must_acquire(&backend, &key);
    assert!(
        again.fencing_token > lease.fencing_token,
        "{} !> {}",
        again.fencing_token,
        lease.fencing_token
    );
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&again, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );
}

#[cfg(feature = "tokio")]
#[test]
fn a_dead_server_fails_closed_on_the_async_side_and_it_recovers() {
    use leader_core::AsyncLockBackend;

    let Some(mut server) = common::private_server() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let backend = RedisBackend::connect_with(&server.url(), fast_config()).unwrap();
        let key = fresh_name("async-fault");
        let AcquireOutcome::Acquired(lease) =
            AsyncLockBackend::try_acquire(&backend, request(&key, OwnerToken::random()))
                .await
                .unwrap()
        else {
            panic!("acquire")
        };

        server.kill();
        let started = Instant::now();
        for _ in 0..3 {
            let extended =
                AsyncLockBackend::extend(&backend, Renewal::new(&lease, Duration::from_secs(30)))
                    .await;
            assert_backend_error(extended, &backend, &key, BackendErrorKind::Transient);
        }
        let state = AsyncLockBackend::state(&backend, &key).await;
        assert_backend_error(state, &backend, &key, BackendErrorKind::Transient);
        assert!(
            started.elapsed() < 4 * (TIMEOUT + TIMEOUT),
            "took {:?}",
            started.elapsed()
        );

        server.restart(Data::Keep).unwrap();
        // The first call after the server is back succeeds: the dead connection is
        // noticed and replaced within the call.
        let again = match AsyncLockBackend::try_acquire(
            &backend,
            request(&key, OwnerToken::random()),
        )
        .await
        {
            Ok(AcquireOutcome::Acquired(lease)) => lease,
            other => panic!("the first call after the restart: {other:?}"),
        };
        assert!(again.fencing_token > lease.fencing_token);
    });
}

#[test]
fn a_frozen_server_times_out_instead_of_hanging() {
    let Some(server) = common::private_server() else {
        return;
    };
    let backend = RedisBackend::connect_with(&server.url(), fast_config()).unwrap();
    let key = fresh_name("frozen");
    let lease = must_acquire(&backend, &key);

    server.pause();
    let started = Instant::now();
    let extended = LockBackend::extend(&backend, Renewal::new(&lease, Duration::from_secs(30)));
    let took = started.elapsed();
    server.resume();
    assert_backend_error(extended, &backend, &key, BackendErrorKind::Transient);
    assert!(
        took >= TIMEOUT / 2 && took < TIMEOUT + TIMEOUT,
        "a frozen server answered after {took:?}"
    );
    // The timed-out connection was dropped; a fresh one works.
    assert!(matches!(
        LockBackend::extend(&backend, Renewal::new(&lease, Duration::from_secs(30))).unwrap(),
        leader_core::ExtendOutcome::Extended { .. }
    ));

    #[cfg(feature = "tokio")]
    {
        use leader_core::AsyncLockBackend;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let state = AsyncLockBackend::state(&backend, &key).await.unwrap();
            assert_eq!(state.status(), LockStatus::Occupied);
            server.pause();
            let started = Instant::now();
            let state = AsyncLockBackend::state(&backend, &key).await;
            let took = started.elapsed();
            server.resume();
            assert_backend_error(state, &backend, &key, BackendErrorKind::Transient);
            assert!(
                took < TIMEOUT + TIMEOUT,
                "a frozen server answered after {took:?}"
            );
        });
    }
}

#[test]
fn foreign_data_at_a_lock_key_is_a_permanent_error() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut raw = harness.raw();

    let key = fresh_name("wrongtype");
    let _: () = redis::cmd("SET")
        .arg(backend.lock_key(&key))
        .arg("not a lock")
        .query(&mut raw)
        .unwrap();
    let acquired = LockBackend::try_acquire(&backend, request(&key, OwnerToken::random()));
    let text = assert_backend_error(acquired, &backend, &key, BackendErrorKind::Permanent);
    assert!(text.contains("WRONGTYPE"), "{text}");
    assert_backend_error(
        LockBackend::state(&backend, &key),
        &backend,
        &key,
        BackendErrorKind::Permanent,
    );

    // A fencing counter that is not a counter.
    let key = fresh_name("wrongtype-fence");
    let _: () = redis::cmd("HSET")
        .arg(format!("{}:fence", backend.lock_key(&key)))
        .arg("x")
        .arg("y")
        .query(&mut raw)
        .unwrap();
    let acquired = LockBackend::try_acquire(&backend, request(&key, OwnerToken::random()));
    assert_backend_error(acquired, &backend, &key, BackendErrorKind::Permanent);
}

#[test]
fn corrupted_records_are_permanent_errors_and_never_overwritten() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut raw = harness.raw();

    let key = fresh_name("corrupt");
    let lock_key = backend.lock_key(&key);
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(&lock_key)
        .arg(&[
            "owner", "someone", "leader", "n", "fence", "1.7e+15", "acq", "1", "exp", "2",
        ])
        .ignore()
        .cmd("PEXPIRE")
        .arg(&lock_key)
        .arg(30_000)
        .ignore()
        .query(&mut raw)
        .unwrap();
    let state = assert_backend_error(
        LockBackend::state(&backend, &key),
        &backend,
        &key,
        BackendErrorKind::Permanent,
    );
    assert!(state.contains("fence"), "{state}");
    let acquired = LockBackend::try_acquire(&backend, request(&key, OwnerToken::random()));
    assert_backend_error(acquired, &backend, &key, BackendErrorKind::Permanent);
    let owner: String = redis::cmd("HGET")
        .arg(&lock_key)
        .arg("owner")
        .query(&mut raw)
        .unwrap();
    assert_eq!(
        owner, "someone",
        "a corrupted record is reported, not replaced"
    );

    // A lock hash without expiry would never be freed.
    let key = fresh_name("no-expiry");
    let _: () = redis::cmd("HSET")
        .arg(backend.lock_key(&key))
        .arg(&[
            "owner", "o", "leader", "n", "fence", "1", "acq", "1", "exp", "2",
        ])
        .query(&mut raw)
        .unwrap();
    let state = assert_backend_error(
        LockBackend::state(&backend, &key),
        &backend,
        &key,
        BackendErrorKind::Permanent,
    );
    assert!(state.contains("expiry"), "{state}");
    // Acquire agrees: a record that would never be freed is an error, never a holder
    // that makes every node skip the job forever.
    let acquired = LockBackend::try_acquire(&backend, request(&key, OwnerToken::random()));
    let text = assert_backend_error(acquired, &backend, &key, BackendErrorKind::Permanent);
    assert!(text.contains("expiry"), "{text}");
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = leader_blocking::LeaderElector::new(backend.clone(), options).unwrap();
    let outcome = elector.run_if_leader(key.as_str(), || panic!("the action must not run"));
    assert!(!outcome.expect_err("an error, not a skip").is_transient());
}

/// Writes a lock record at `lock_key` with no key expiry, its own end `exp` at `ends`.
fn write_without_expiry(raw: &mut redis::Connection, lock_key: &str, fence: u64, ends: SystemTime) {
    let ends = ends
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_micros();
    let _: () = redis::cmd("HSET")
        .arg(lock_key)
        .arg("owner")
        .arg("00000000000000000000000000000abc")
        .arg("leader")
        .arg("stripped")
        .arg("fence")
        .arg(fence)
        .arg("acq")
        .arg(1)
        .arg("exp")
        .arg(ends.to_string())
        .query(raw)
        .unwrap();
    let ttl: i64 = redis::cmd("PTTL").arg(lock_key).query(raw).unwrap();
    assert_eq!(ttl, -1, "no key expiry");
}

/// The names of every lock `list` shows under `prefix` (all pages), sorted: a scan's
/// order is the server's hash table's, not the names'.
fn listed(backend: &RedisBackend, prefix: &str) -> Result<Vec<String>, Error> {
    let mut names = Vec::new();
    let mut request = ListRequest::new(prefix);
    loop {
        let page = LockBackend::list(backend, &request)?;
        names.extend(page.locks.iter().map(|state| state.lock_name().to_owned()));
        match page.next {
            Some(cursor) => request = ListRequest::new(prefix).after(cursor),
            None => {
                names.sort();
                return Ok(names);
            }
        }
    }
}

/// A lock record stripped of its key expiry whose own `exp` is still ahead is a holder,
/// as acquire has it (it saves a `PTTL` per held attempt): every read path says so too —
/// `state` (and so an observer's read and the CLI), both listings (a scan, a name's index
/// of derived names), the async `state`, and a force release frees it as any holder.
#[test]
fn a_record_without_expiry_whose_end_is_ahead_is_a_holder_on_every_path() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut raw = harness.raw();
    let key = fresh_name("stripped-live");
    let derived = LockName::new(format!("{key}#1")).unwrap();
    let ends = SystemTime::now() + Duration::from_secs(3600);
    write_without_expiry(&mut raw, &backend.lock_key(&key), 7, ends);
    write_without_expiry(&mut raw, &backend.lock_key(&derived), 8, ends);
    let _: () = redis::cmd("ZADD")
        .arg(format!("{}:derived", backend.lock_key(&key)))
        .arg(0)
        .arg("1")
        .query(&mut raw)
        .unwrap();

    // Acquire: held.
    for name in [&key, &derived] {
        match LockBackend::try_acquire(&backend, request(name, OwnerToken::random())).unwrap() {
            AcquireOutcome::Held(Some(holder)) => assert_eq!(holder.leader_id, "stripped"),
            other => panic!("{name}: expected held, got {other:?}"),
        }
    }
    // Every read agrees.
    let state = LockBackend::state(&backend, &key).unwrap();
    assert_eq!(state.status(), LockStatus::Occupied, "{state:?}");
    assert_eq!(state.leader().unwrap().fencing_token, 7);
    #[cfg(feature = "tokio")]
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let state = runtime
            .block_on(leader_core::AsyncLockBackend::state(&backend, &derived))
            .unwrap();
        assert_eq!(state.leader().unwrap().fencing_token, 8, "{state:?}");
    }
    assert_eq!(
        listed(&backend, key.as_str()).unwrap(),
        [key.to_string(), derived.to_string()],
        "the scan lists both"
    );
    assert_eq!(
        listed(&backend, &format!("{key}#")).unwrap(),
        [derived.to_string()],
        "the index lists the derived one"
    );
    // A force release frees it like any holder; a conditional one only with its token.
    match LockBackend::force_release_if(&backend, &key, 6).unwrap() {
        ForceReleaseOutcome::HolderChanged(holder) => assert_eq!(holder.fencing_token, 7),
        other => panic!("expected the holder, got {other:?}"),
    }
    match LockBackend::force_release(&backend, &key).unwrap() {
        ForceReleaseOutcome::Released(holder) => assert_eq!(holder.fencing_token, 7),
        other => panic!("expected a release, got {other:?}"),
    }
    assert_eq!(
        LockBackend::state(&backend, &key).unwrap().status(),
        LockStatus::Empty
    );
}

/// Past its own `exp`, a record without key expiry would never be freed: every path
/// reports it, permanently, and none deletes or overwrites it.
#[test]
fn a_record_without_expiry_past_its_end_is_an_error_on_every_path() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut raw = harness.raw();
    let key = fresh_name("stripped-dead");
    let lock_key = backend.lock_key(&key);
    write_without_expiry(
        &mut raw,
        &lock_key,
        7,
        SystemTime::now() - Duration::from_secs(3600),
    );

    let acquired = LockBackend::try_acquire(&backend, request(&key, OwnerToken::random()));
    assert!(
        assert_backend_error(acquired, &backend, &key, BackendErrorKind::Permanent)
            .contains("expiry")
    );
    let state = LockBackend::state(&backend, &key);
    assert!(
        assert_backend_error(state, &backend, &key, BackendErrorKind::Permanent).contains("expiry")
    );
    let forced = LockBackend::force_release(&backend, &key);
    assert!(
        assert_backend_error(forced, &backend, &key, BackendErrorKind::Permanent)
            .contains("expiry")
    );
    let listing = listed(&backend, key.as_str()).unwrap_err();
    assert!(
        !listing.is_transient() && listing.to_string().contains("expiry"),
        "{listing}"
    );
    let fence: u64 = redis::cmd("HGET")
        .arg(&lock_key)
        .arg("fence")
        .query(&mut raw)
        .unwrap();
    assert_eq!(fence, 7, "left as it was");
}

/// A permanent "corrupted record" error of the record `key`.
#[track_caller]
fn assert_corrupt_record<T: std::fmt::Debug>(result: Result<T, Error>, key: &LockName) {
    match result {
        Err(Error::Backend(err)) => {
            assert_eq!(err.backend(), "redis");
            assert_eq!(err.key(), key.as_str());
            assert_eq!(err.kind(), BackendErrorKind::Permanent, "{err}");
            assert!(err.to_string().contains("corrupted record"), "{err}");
        }
        other => panic!("expected a corrupted record error, got {other:?}"),
    }
}

#[test]
fn garbled_records_are_permanent_errors_and_never_overwritten() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut raw = harness.raw();

    // Each shape no backend writes, straight into the record's key.
    let garbles: [(&str, redis::Cmd); 4] = [
        ("version-text", redis::cmd("HSET")),
        ("version-zero", redis::cmd("HSET")),
        ("value-bytes", redis::cmd("HSET")),
        ("wrong-type", redis::cmd("SET")),
    ];
    for (what, mut garble) in garbles {
        let key = fresh_name(what);
        let record_key = backend.record_key(&key);
        garble.arg(&record_key);
        match what {
            "version-text" => garble.arg(&["version", "one", "value", "{}"]),
            "version-zero" => garble.arg(&["version", "0", "value", "{}"]),
            "value-bytes" => garble
                .arg("version")
                .arg("1")
                .arg("value")
                .arg(&b"\xff\xfe"[..]),
            _ => garble.arg("1"),
        };
        let _: () = garble.query(&mut raw).unwrap();
        let before: Vec<u8> = redis::cmd("DUMP").arg(&record_key).query(&mut raw).unwrap();

        assert_corrupt_record(LockBackend::read_record(&backend, &key), &key);
        for expected in [None, Some(1), Some(2)] {
            let write = RecordWrite::new(&key, expected, "overwritten").unwrap();
            assert_corrupt_record(LockBackend::write_record(&backend, write), &key);
        }
        let after: Vec<u8> = redis::cmd("DUMP").arg(&record_key).query(&mut raw).unwrap();
        assert_eq!(
            after, before,
            "{what}: the garbled record is left as it was"
        );
    }
}

#[test]
fn the_first_blocking_call_after_a_restart_succeeds() {
    let Some(mut server) = common::private_server() else {
        return;
    };
    let backend = RedisBackend::connect_with(&server.url(), fast_config()).unwrap();
    let key = fresh_name("restart");
    let lease = must_acquire(&backend, &key);
    // The pooled connection is idle across the restart.
    server.kill();
    server.restart(Data::Keep).unwrap();
    let again = must_acquire(&backend, &key);
    assert!(again.fencing_token > lease.fencing_token);
}

#[test]
fn backends_with_different_prefixes_do_not_see_each_other() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let first = harness.make();
    let second = harness
        .clone()
        .with_config(RedisConfig::default().with_key_prefix("other-app"))
        .make();
    let key = fresh_name("prefix");
    let lease = must_acquire(&first, &key);
    assert_eq!(
        LockBackend::state(&second, &key).unwrap().status(),
        LockStatus::Empty
    );
    let theirs = must_acquire(&second, &key);
    assert_eq!(
        LockBackend::state(&first, &key)
            .unwrap()
            .leader()
            .map(|l| l.fencing_token),
        Some(lease.fencing_token)
    );
    assert_eq!(
        LockBackend::release(&second, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        ReleaseOutcome::NotHeld
    );
    LockBackend::release(&first, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    LockBackend::release(&second, ReleaseRequest::new(&theirs, Duration::ZERO)).unwrap();
    assert_eq!(second.lock_key(&key), format!("other-app:{{{key}}}"));
}

#[test]
fn bad_urls_and_settings_are_typed_errors_at_construction() {
    match RedisBackend::connect("http://user:hunter2@127.0.0.1/") {
        Err(ConnectError::InvalidUrl { url, .. }) => {
            assert!(!url.contains("hunter2"), "{url}");
        }
        other => panic!("expected InvalidUrl, got {other:?}"),
    }
    assert!(matches!(
        RedisBackend::connect("not a url"),
        Err(ConnectError::InvalidUrl { .. })
    ));
    assert!(matches!(
        RedisBackend::connect_cluster(Vec::<String>::new(), RedisConfig::default()),
        Err(ConnectError::NoClusterNodes)
    ));
    assert!(matches!(
        RedisBackend::connect_cluster(["redis://127.0.0.1/", "bogus"], RedisConfig::default()),
        Err(ConnectError::InvalidUrl { .. })
    ));
    assert!(matches!(
        RedisBackend::connect_with(
            "redis://127.0.0.1/",
            RedisConfig::default().with_key_prefix("a{b")
        ),
        Err(ConnectError::InvalidKeyPrefix { .. })
    ));
}

#[test]
fn an_unreachable_server_is_an_error_never_held() {
    // Nothing listens on this port: connection refused, quickly, and transient.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let backend =
        RedisBackend::connect_with(&format!("redis://127.0.0.1:{port}/"), fast_config()).unwrap();
    let key = fresh_name("refused");
    let acquired = LockBackend::try_acquire(&backend, request(&key, OwnerToken::random()));
    assert_backend_error(acquired, &backend, &key, BackendErrorKind::Transient);
}
