//! Clusters that cannot serve this backend give clear, typed errors naming the lock, and
//! nothing is changed: no member listening, keys of another shape at a lock's or a
//! record's paths, a wrong password or a user without permission on the prefix; and what
//! a lease time becomes in etcd's whole seconds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::common::{
    Raw, assert_backend_error, bound, config, fails_fast, fast, must_acquire, private_server,
    unused_port,
};
use leader_core::{
    AcquireRequest, Error, LeaderElectionOptions, Lease, ListRequest, LockBackend, LockName,
    MAX_RECORD_LEN, OwnerToken, RecordWrite, ReleaseRequest, Renewal,
};
use leader_etcd::EtcdBackend;
use leader_rig::fixtures;
use leader_testkit::fresh_name;

const LEASE: Duration = Duration::from_secs(30);

fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest::new(key, OwnerToken::random(), "node", LEASE)
}

#[test]
fn an_unreachable_cluster_fails_every_call_transiently_within_the_timeout() {
    let config = fast("unreachable");
    let bound = bound(&config);
    let url = format!("etcd://127.0.0.1:{}", unused_port());
    let backend = EtcdBackend::connect_with(&url, config).unwrap();
    let key = fresh_name("unreachable");
    let now = SystemTime::now();
    let lease = Lease::new(
        key.clone(),
        OwnerToken::random(),
        "node",
        7,
        now,
        now + LEASE,
    );

    fails_fast("try_acquire", &key, bound, || {
        backend.try_acquire(request(&key))
    });
    fails_fast("extend", &key, bound, || {
        backend.extend(Renewal::new(&lease, LEASE))
    });
    fails_fast("release", &key, bound, || {
        backend.release(ReleaseRequest::new(&lease, Duration::ZERO))
    });
    fails_fast("state", &key, bound, || backend.state(&key));
    fails_fast("force_release", &key, bound, || backend.force_release(&key));
    // A listing names its prefix.
    let started = Instant::now();
    let listed = backend.list(&ListRequest::new("unreach"));
    assert!(
        started.elapsed() < bound,
        "list took {:?}",
        started.elapsed()
    );
    leader_testkit::checks::assert_backend_error(listed, "unreach", true, "etcd");

    let ran = AtomicBool::new(false);
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = leader_blocking::LeaderElector::new(backend.clone(), options).unwrap();
    let started = Instant::now();
    let result = elector.run_if_leader(key.as_str(), || ran.store(true, Ordering::SeqCst));
    assert!(started.elapsed() < bound, "took {:?}", started.elapsed());
    assert!(
        matches!(&result, Err(err @ Error::Backend(_)) if err.is_transient()),
        "{result:?}"
    );
    assert!(!ran.load(Ordering::SeqCst), "the action must not run");
}

/// Writes `garbage` at `{prefix}/{kind}/{name}` of a fresh lock; each call that reads the
/// key refuses it, permanently and naming the lock, and the key is left as it was.
fn refused_and_kept(raw: &Raw, backend: &EtcdBackend, kind: &str, garbage: &[u8]) -> LockName {
    let key = fresh_name(&format!("shape-{kind}"));
    let path = format!("{}/{kind}/{key}", backend.prefix());
    raw.put(&path, garbage);
    let err = backend.try_acquire(request(&key)).unwrap_err();
    assert!(err.to_string().contains(key.as_str()), "{err}");
    assert_backend_error(backend.try_acquire(request(&key)), &key, false);
    assert_eq!(
        raw.get(&path).as_deref(),
        Some(garbage),
        "{kind}: the key was overwritten"
    );
    key
}

#[test]
fn keys_of_another_shape_at_a_locks_paths_are_refused_and_left_as_they_were() {
    let Some(server) = fixtures::shared_etcd() else {
        return;
    };
    let raw = Raw::connect(&[server.endpoint()], None);
    let backend = EtcdBackend::connect_with(&server.url(), config("shapes")).unwrap();

    for garbage in [&b"somebody else's"[..], br#"{"owner":"x"}"#, b"v1 12"] {
        // A holder record: every read of it refuses it.
        let key = refused_and_kept(&raw, &backend, "holder", garbage);
        assert_backend_error(backend.state(&key), &key, false);
        let listed = backend.list(&ListRequest::new(key.as_str()));
        let err = listed.unwrap_err();
        assert!(!err.is_transient(), "{err}");
        assert!(err.to_string().contains(key.as_str()), "{err}");
        assert!(raw.get(&format!("shapes/lock/{key}")).is_none());

        // A lock key: the lock is not free, and not this backend's to take; `state`
        // must not call it free. (A listing pages through the holder keys only, and
        // shows no holder for it.)
        let key = refused_and_kept(&raw, &backend, "lock", garbage);
        assert_backend_error(backend.state(&key), &key, false);
        assert!(raw.get(&format!("shapes/holder/{key}")).is_none());

        // A fencing counter: no token can be compared with it.
        let key = refused_and_kept(&raw, &backend, "fence", garbage);
        assert_backend_error(backend.state(&key), &key, false);
        assert!(raw.get(&format!("shapes/lock/{key}")).is_none());
    }
    // Counters that sort below any token byte-wise (etcd's compare): still not taken over.
    for garbage in [&br#""quoted""#[..], b"", b" 42", b"-1"] {
        let key = refused_and_kept(&raw, &backend, "fence", garbage);
        assert!(raw.get(&format!("shapes/lock/{key}")).is_none());
    }
}

#[test]
fn a_garbled_record_is_refused_and_left_as_it_was() {
    let Some(server) = fixtures::shared_etcd() else {
        return;
    };
    let raw = Raw::connect(&[server.endpoint()], None);
    let backend = EtcdBackend::connect_with(&server.url(), config("shapes")).unwrap();

    let too_long = vec![b'x'; MAX_RECORD_LEN + 1];
    for garbage in [&b"\xff\xfe not UTF-8"[..], &too_long] {
        let key = fresh_name("shape-record");
        let path = format!("{}/record/{key}", backend.prefix());
        // Its etcd version is 1, what a blind write over version 1 expects.
        raw.put(&path, garbage);
        let corrupt = |err: Error| {
            assert!(!err.is_transient(), "{err}");
            let text = err.to_string();
            assert!(text.contains("corrupted record"), "{text}");
            assert!(text.contains(key.as_str()), "{text}");
        };
        corrupt(backend.read_record(&key).unwrap_err());
        for expected in [None, Some(1), Some(2)] {
            let write = RecordWrite::new(&key, expected, "overwritten").unwrap();
            corrupt(backend.write_record(write).unwrap_err());
        }
        assert_eq!(
            raw.get(&path).as_deref(),
            Some(garbage),
            "the record was overwritten"
        );
    }
}

#[test]
fn a_wrong_password_or_a_user_without_permission_is_permanent_and_never_shown() {
    let Some(server) = private_server() else {
        return;
    };
    let endpoints = [server.endpoint()];
    let admin = Raw::connect(&endpoints, None);
    admin
        .with(|mut c| async move {
            c.role_add("root").await?;
            c.user_add("root", "r00t-secret", None).await?;
            c.user_grant_role("root", "root").await?;
            c.role_add("elsewhere").await?;
            let perm = etcd_client::Permission::read_write("elsewhere/").with_prefix();
            c.role_grant_permission("elsewhere", perm).await?;
            c.user_add("app", "s3cret-app-pw", None).await?;
            c.user_grant_role("app", "elsewhere").await?;
            c.auth_enable().await
        })
        .unwrap();
    let addr = server.endpoint();
    let key = fresh_name("auth");

    let wrong = EtcdBackend::connect_with(
        &format!("etcd://app:wr0ng-pa55@{addr}/guarded"),
        config("guarded"),
    )
    .unwrap();
    let err = wrong.try_acquire(request(&key)).unwrap_err();
    for shown in [err.to_string(), format!("{err:?}"), format!("{wrong:?}")] {
        assert!(!shown.contains("wr0ng-pa55"), "the password shows: {shown}");
    }
    assert_backend_error(Err::<(), _>(err), &key, false);
    assert_backend_error(wrong.state(&key), &key, false);

    // The right password, but no permission on the prefix.
    let denied = EtcdBackend::connect_with(
        &format!("etcd://app:s3cret-app-pw@{addr}/guarded"),
        config("guarded"),
    )
    .unwrap();
    let err = denied.try_acquire(request(&key)).unwrap_err();
    for shown in [err.to_string(), format!("{err:?}"), format!("{denied:?}")] {
        assert!(
            !shown.contains("s3cret-app-pw"),
            "the password shows: {shown}"
        );
    }
    assert_backend_error(Err::<(), _>(err), &key, false);
    assert_backend_error(denied.state(&key), &key, false);

    // With the permission it works: the refusals above were the permissions'.
    let root = Raw::connect(&endpoints, Some(("root", "r00t-secret")));
    root.with(|mut c| async move {
        let perm = etcd_client::Permission::read_write("guarded/").with_prefix();
        c.role_grant_permission("elsewhere", perm).await
    })
    .unwrap();
    let lease = must_acquire(&denied, &key, "node", LEASE);
    assert!(root.get(&format!("guarded/holder/{key}")).is_some());
    denied
        .release(ReleaseRequest::new(&lease, Duration::ZERO))
        .unwrap();
}

#[test]
fn a_lease_rounds_up_to_whole_seconds_and_says_so() {
    let Some(server) = fixtures::shared_etcd() else {
        return;
    };
    let backend = EtcdBackend::connect_with(&server.url(), config("rounding")).unwrap();
    for (asked, granted) in [
        (Duration::from_millis(300), Duration::from_secs(1)),
        (Duration::from_millis(1500), Duration::from_secs(2)),
        (Duration::from_secs(3), Duration::from_secs(3)),
    ] {
        let key = fresh_name("rounding");
        let lease = must_acquire(&backend, &key, "node", asked);
        let length = lease.expires_at.duration_since(lease.acquired_at).unwrap();
        assert_eq!(length, granted, "asked for {asked:?}");
        assert!(length >= asked);
        backend
            .release(ReleaseRequest::new(&lease, Duration::ZERO))
            .unwrap();
    }
    let key = fresh_name("too-long");
    let too_long = AcquireRequest::new(&key, OwnerToken::random(), "node", Duration::MAX);
    assert_backend_error(backend.try_acquire(too_long), &key, false);
}
