//! Construction and failure without a server: invalid connection strings, an unreachable
//! server on every runtime, credentials kept out of `Debug`, dropping inside a runtime.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use leader_core::{AcquireRequest, AsyncLockBackend, Backend, LockBackend, LockName, OwnerToken};
use leader_mongodb::{ConnectError, MongoBackend, MongoConfig};

#[test]
fn invalid_connection_strings_are_typed_errors() {
    for uri in [
        "http://127.0.0.1/",
        "mongodb://",
        "mongodb://127.0.0.1:notaport/",
        "",
    ] {
        match MongoBackend::connect(uri) {
            Err(ConnectError::InvalidUri(_)) => {}
            other => panic!("{uri:?}: expected InvalidUri, got {other:?}"),
        }
    }
}

#[test]
fn the_database_comes_from_the_config_then_the_uri_then_the_default() {
    let from_uri = MongoBackend::connect("mongodb://127.0.0.1:1/inventory").unwrap();
    assert_eq!(from_uri.database_name(), "inventory");
    let default = MongoBackend::connect("mongodb://127.0.0.1:1/").unwrap();
    assert_eq!(default.database_name(), "leader");
    assert_eq!(default.config().collection(), "leader_locks");
    let configured = MongoBackend::connect_with(
        "mongodb://127.0.0.1:1/inventory",
        MongoConfig::new().with_database("ops"),
    )
    .unwrap();
    assert_eq!(configured.database_name(), "ops");
    assert_eq!(configured.name(), "mongodb");
}

#[test]
fn debug_output_hides_credentials() {
    let backend = MongoBackend::connect("mongodb://admin:s3cret@127.0.0.1:1/").unwrap();
    let debug = format!("{backend:?}");
    assert!(!debug.contains("s3cret"), "{debug}");
    assert!(debug.contains("leader_locks"), "{debug}");
}

/// A loopback port nobody listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn unreachable_backend() -> MongoBackend {
    let uri = format!(
        "mongodb://127.0.0.1:{}/?directConnection=true",
        closed_port()
    );
    let config = MongoConfig::new()
        .with_server_selection_timeout(Duration::from_millis(500))
        .with_connect_timeout(Duration::from_millis(500))
        .with_operation_timeout(Duration::from_secs(2));
    MongoBackend::connect_with(&uri, config).unwrap()
}

fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest::new(key, OwnerToken::random(), "node-a", Duration::from_secs(30))
}

fn assert_transient_within<T: std::fmt::Debug>(
    what: &str,
    key: &LockName,
    started: Instant,
    result: Result<T, leader_core::Error>,
) {
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{what} took {took:?}");
    let err = result.expect_err(what);
    assert_eq!(err.lock_key(), Some(key.as_str()), "{what}: {err}");
    assert!(err.is_transient(), "{what}: {err}");
}

#[test]
fn an_unreachable_server_is_a_transient_error_within_the_timeout_on_every_runtime() {
    let backend = unreachable_backend();
    let key = LockName::new("unreachable").unwrap();

    let started = Instant::now();
    let result = LockBackend::try_acquire(&backend, request(&key));
    assert_transient_within("blocking", &key, started, result);

    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let result = tokio.block_on(AsyncLockBackend::try_acquire(&backend, request(&key)));
    assert_transient_within("tokio", &key, started, result);

    let started = Instant::now();
    let result = tokio.block_on(async { LockBackend::state(&backend, &key) });
    assert_transient_within("blocking inside tokio", &key, started, result);

    let started = Instant::now();
    let result = async_std::task::block_on(AsyncLockBackend::state(&backend, &key));
    assert_transient_within("async-std", &key, started, result);

    let started = Instant::now();
    let result = smol::block_on(AsyncLockBackend::state(&backend, &key));
    assert_transient_within("smol", &key, started, result);
}

#[test]
fn a_backend_may_be_built_and_dropped_inside_an_async_runtime() {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        let backend = MongoBackend::connect("mongodb://127.0.0.1:1/").unwrap();
        let clone = backend.clone();
        drop(backend);
        drop(clone);
    });
    smol::block_on(async {
        drop(MongoBackend::connect("mongodb://127.0.0.1:1/").unwrap());
    });
}
