//! `rediss://` against a TLS-only redis-server with a CA of its own (the test process's
//! shared `leader_rig::fixtures::shared_redis_tls`), blocking and async.

use std::time::{Duration, Instant};

use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, LockBackend, LockStatus, OwnerToken, ReleaseOutcome,
    ReleaseRequest,
};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures;
use leader_testkit::fresh_name;

fn tls_backend() -> Option<RedisBackend> {
    let server = fixtures::shared_redis_tls()?;
    let pem = server.ca_certificate_pem().unwrap().to_vec();
    let config = RedisConfig::default().with_tls_root_certificate(pem);
    Some(RedisBackend::connect_with(&server.url(), config).unwrap())
}

#[test]
fn locks_work_over_tls() {
    let Some(backend) = tls_backend() else {
        return;
    };
    let key = fresh_name("tls");
    let request = |owner, node| {
        AcquireRequest::new(&key, owner, node, Duration::from_secs(30)).with_db_time(true)
    };
    let AcquireOutcome::Acquired(lease) =
        LockBackend::try_acquire(&backend, request(OwnerToken::random(), "a")).unwrap()
    else {
        panic!("acquire over TLS")
    };
    assert!(matches!(
        LockBackend::try_acquire(&backend, request(OwnerToken::random(), "b")).unwrap(),
        AcquireOutcome::Held(Some(holder)) if holder.leader_id == "a"
    ));
    assert_eq!(
        LockBackend::state(&backend, &key).unwrap().status(),
        LockStatus::Occupied
    );

    // The release subscription runs over TLS too.
    let events = backend.release_events().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !backend.is_subscribed() {
        assert!(Instant::now() < deadline, "no TLS subscription");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A waiter listens, then tries: its try tells the holder's release to announce itself.
    let listener = events.listen(key.as_str());
    assert!(matches!(
        LockBackend::try_acquire(&backend, request(OwnerToken::random(), "b")).unwrap(),
        AcquireOutcome::Held(_)
    ));
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );
    assert!(listener.wait_timeout(Duration::from_secs(2)));
}

#[cfg(any(feature = "tokio", feature = "smol"))]
async fn async_cycle(backend: RedisBackend) {
    use leader_core::AsyncLockBackend;
    let key = fresh_name("tls-async");
    let request = AcquireRequest::new(&key, OwnerToken::random(), "a", Duration::from_secs(30));
    let AcquireOutcome::Acquired(lease) = AsyncLockBackend::try_acquire(&backend, request)
        .await
        .unwrap()
    else {
        panic!("acquire over TLS")
    };
    assert_eq!(
        AsyncLockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO))
            .await
            .unwrap(),
        ReleaseOutcome::Released
    );
}

#[cfg(feature = "tokio")]
#[test]
fn async_locks_work_over_tls_on_tokio() {
    let Some(backend) = tls_backend() else {
        return;
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async_cycle(backend));
}

#[cfg(feature = "smol")]
#[test]
fn async_locks_work_over_tls_on_smol() {
    let Some(backend) = tls_backend() else {
        return;
    };
    smol::block_on(async_cycle(backend));
}

#[test]
fn an_untrusted_certificate_is_an_error() {
    let Some(server) = fixtures::shared_redis_tls() else {
        return;
    };
    // The system roots do not include the test CA.
    let backend = RedisBackend::connect(&server.url()).unwrap();
    let key = fresh_name("tls-untrusted");
    let request = AcquireRequest::new(&key, OwnerToken::random(), "a", Duration::from_secs(30));
    let err = LockBackend::try_acquire(&backend, request).unwrap_err();
    assert_eq!(err.lock_key(), Some(backend.lock_key(&key).as_str()));
    assert!(
        !err.is_transient(),
        "a certificate problem needs someone to fix it: {err}"
    );
    assert!(err.to_string().contains("TLS"), "{err}");
}
