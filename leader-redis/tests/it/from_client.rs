//! Backends built on the caller's driver clients (`from_client`, `from_cluster_client`)
//! take, hold and release locks, and run the release subscription, like URL-built ones.

use crate::common;

use std::time::Duration;

#[cfg(feature = "tokio")]
use leader_core::AsyncLockBackend;
use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, LockBackend, LockName, LockStatus, OwnerToken,
    ReleaseOutcome, ReleaseRequest,
};
use leader_redis::redis::{self, cluster::ClusterClient};
use leader_redis::{ConnectError, RedisBackend, RedisConfig};
use leader_rig::fixtures;
use leader_testkit::fresh_name;

fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest::new(
        key,
        OwnerToken::random(),
        "from-client",
        Duration::from_secs(30),
    )
}

/// Acquires (blocking), sees the lock held by another owner and in the state, releases,
/// then acquires and releases once more on the async side (with tokio).
fn takes_and_releases(backend: &RedisBackend) {
    let key = fresh_name("from-client");
    let AcquireOutcome::Acquired(lease) = LockBackend::try_acquire(backend, request(&key)).unwrap()
    else {
        panic!("a fresh lock was not acquired");
    };
    assert!(matches!(
        LockBackend::try_acquire(backend, request(&key)).unwrap(),
        AcquireOutcome::Held(_)
    ));
    let state = LockBackend::state(backend, &key).unwrap();
    assert_eq!(state.status(), LockStatus::Occupied);
    assert_eq!(
        LockBackend::release(backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );
    #[cfg(feature = "tokio")]
    takes_and_releases_async(backend, &key);
}

#[cfg(feature = "tokio")]
fn takes_and_releases_async(backend: &RedisBackend, key: &LockName) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let AcquireOutcome::Acquired(lease) = AsyncLockBackend::try_acquire(backend, request(key))
            .await
            .unwrap()
        else {
            panic!("the released lock was not acquired on the async side");
        };
        assert_eq!(
            AsyncLockBackend::release(backend, ReleaseRequest::new(&lease, Duration::ZERO))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
    });
}

#[test]
fn a_backend_from_a_client_locks_and_subscribes() {
    let Some(server) = fixtures::shared_redis() else {
        return;
    };
    let client = redis::Client::open(server.url()).unwrap();
    let backend = RedisBackend::from_client(client.clone(), RedisConfig::default()).unwrap();
    takes_and_releases(&backend);
    common::subscribed(&backend);
    // The caller's client is still theirs to use.
    let pong: String = redis::cmd("PING")
        .query(&mut client.get_connection().unwrap())
        .unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn a_backend_from_a_cluster_client_locks_and_subscribes() {
    let Some(servers) = fixtures::shared_redis_cluster() else {
        return;
    };
    let urls = servers.urls();
    let cluster = ClusterClient::new(urls.clone()).unwrap();
    let nodes: Vec<redis::Client> = urls
        .iter()
        .map(|url| redis::Client::open(url.as_str()).unwrap())
        .collect();
    let backend =
        RedisBackend::from_cluster_client(cluster, nodes, RedisConfig::default()).unwrap();
    takes_and_releases(&backend);
    common::subscribed(&backend);
}

#[test]
fn a_cluster_client_needs_subscription_nodes_only_for_notifications() {
    let cluster = || ClusterClient::new(vec!["redis://127.0.0.1:7000/"]).unwrap();
    let err = RedisBackend::from_cluster_client(cluster(), [], RedisConfig::default()).unwrap_err();
    assert!(matches!(err, ConnectError::NoSubscriptionNodes), "{err}");
    let quiet = RedisConfig::default().with_release_notifications(false);
    let backend = RedisBackend::from_cluster_client(cluster(), [], quiet).unwrap();
    assert!(backend.release_events().is_none());
}

#[test]
fn the_config_is_checked_as_for_urls() {
    let client = redis::Client::open("redis://127.0.0.1/").unwrap();
    let config = RedisConfig::default().with_response_timeout(Duration::ZERO);
    assert!(matches!(
        RedisBackend::from_client(client, config),
        Err(ConnectError::ZeroTimeout("response_timeout"))
    ));
}
