//! `connect(url)` against every backend: the backend a URL gives works with the blocking
//! and the async elector, and is the real store (a second backend on the same server, built
//! by hand, sees its locks).

use std::time::Duration;

use leader::backend::LockBackend;
use leader::{
    AnyBackend, AsyncLeaderElector, LeaderElectionOptions, LeaderElector, LeaseMode, LockStatus,
};
use leader_rig::fixtures;
use leader_testkit::fresh_name;

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(10))
}

/// Runs jobs through both electors on `backend`, checks contention and fencing, and checks
/// that `witness` (another backend on the same store) sees the lock taken through it.
fn exercise(backend: AnyBackend, witness: Option<&dyn LockBackend>) {
    let key = fresh_name("connect");
    let name = key.as_str();
    let a = LeaderElector::new(backend.clone(), options("a")).unwrap();
    let b = LeaderElector::new(backend.clone(), options("b")).unwrap();

    let first = a.run_if_leader_with(name, |lease| Ok::<_, String>(lease.fencing_token()));
    let first = first.unwrap().fencing_token().expect("a led");

    let guard = a
        .acquire(name, LeaseMode::Fixed(Duration::from_secs(10)))
        .unwrap();
    assert!(guard.fencing_token() > first, "fencing tokens grow");
    assert_eq!(
        b.run_if_leader(name, || ()).unwrap(),
        None,
        "b must skip while a holds"
    );
    if let Some(witness) = witness {
        let state = witness.state(&key).unwrap();
        assert_eq!(state.status(), LockStatus::Occupied, "{state:?}");
        assert_eq!(state.leader().unwrap().fencing_token, guard.fencing_token());
    }
    let held = guard.fencing_token();
    guard.release().unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let async_elector = AsyncLeaderElector::new(backend, options("c")).unwrap();
    let outcome = runtime
        .block_on(async_elector.run_if_leader_with(name, |lease| async move {
            Ok::<_, String>(lease.fencing_token())
        }))
        .unwrap();
    assert!(outcome.fencing_token().unwrap() > held, "{outcome:?}");
    assert_eq!(a.state(name).unwrap().status(), LockStatus::Empty);
}

#[test]
fn memory_urls_give_a_working_store() {
    let backend = leader::connect("memory://").unwrap();
    assert_eq!(backend.kind(), "memory");
    exercise(backend, None);
}

#[test]
fn sqlite_urls_give_a_backend_on_that_file_sync_and_async() {
    let dir = std::env::temp_dir().join(format!("leader-connect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("locks.db");
    let url = format!("sqlite://{}", path.display());
    let backend = leader::connect(&url).unwrap();
    assert_eq!(backend.kind(), "sqlite");
    let witness = leader::SqliteBackend::open(&path).unwrap();
    exercise(backend, Some(&witness));

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let backend = runtime.block_on(leader::connect_async(&url)).unwrap();
    exercise(backend, Some(&witness));

    let missing = format!("sqlite://{}/no/such/dir/locks.db", dir.display());
    let err = leader::connect(&missing).unwrap_err();
    assert!(
        matches!(
            err,
            leader::ConnectError::Sqlite(leader::sqlite::ConnectError::CannotOpen { .. })
        ),
        "{err:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An SQLite URL whose path another process could not share is refused, as
/// `SqliteBackend::open` refuses it, sync and async.
#[test]
fn sqlite_urls_of_unshared_databases_are_refused() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let file = std::env::temp_dir().join(format!("leader-unshared-{}.db", std::process::id()));
    for url in [
        "sqlite://:memory:".to_owned(),
        format!("sqlite://file:{}?mode=memory", file.display()),
        format!("sqlite://file:{}?nolock=1", file.display()),
    ] {
        for err in [
            leader::connect(&url).unwrap_err(),
            runtime.block_on(leader::connect_async(&url)).unwrap_err(),
        ] {
            assert!(
                matches!(
                    err,
                    leader::ConnectError::Sqlite(leader::sqlite::ConnectError::NotShared { .. })
                ),
                "{url}: {err:?}"
            );
        }
    }
    assert!(!file.exists(), "nothing was created");
}

#[test]
fn redis_urls_give_the_redis_backend() {
    let Some(server) = fixtures::shared_redis() else {
        return;
    };
    let url = server.url();
    let backend = leader::connect(&url).unwrap();
    assert_eq!(backend.kind(), "redis");
    let witness = leader::RedisBackend::connect(&url).unwrap();
    let elector = LeaderElector::new(backend.clone(), options("a")).unwrap();
    let acme = elector.for_tenant("acme").unwrap();
    assert_eq!(acme.storage_key("job").unwrap(), "leader:{tenant:acme:job}");
    exercise(backend, Some(&witness));
}

#[test]
fn redis_cluster_urls_give_a_cluster_backend() {
    let Some(cluster) = fixtures::shared_redis_cluster() else {
        return;
    };
    let urls = cluster.urls();
    let nodes: Vec<&str> = urls.iter().map(String::as_str).collect();
    let hosts: Vec<&str> = nodes
        .iter()
        .map(|url| url.trim_start_matches("redis://").trim_end_matches('/'))
        .collect();
    let url = format!("redis+cluster://{}", hosts.join(","));
    let backend = leader::connect(&url).unwrap();
    let witness =
        leader::RedisBackend::connect_cluster(&nodes, leader::RedisConfig::default()).unwrap();
    exercise(backend, Some(&witness));
}

/// `rediss://` trusts the system's roots, which include `SSL_CERT_FILE`: the test re-runs
/// itself in a child process with the test CA there (the environment of a running test
/// process cannot be changed safely), given the URL of the parent's server.
#[test]
fn rediss_urls_give_a_tls_backend() {
    const CHILD_RUN: &str = "LEADER_TEST_TLS_CHILD_URL";
    if let Ok(url) = std::env::var(CHILD_RUN) {
        let backend = leader::connect(&url).unwrap();
        exercise(backend, None);
        return;
    }
    let Some(server) = fixtures::shared_redis_tls() else {
        return;
    };
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "connect::rediss_urls_give_a_tls_backend",
            "--nocapture",
        ])
        .env(CHILD_RUN, server.url())
        .env("SSL_CERT_FILE", server.ca_certificate_path().unwrap())
        .env_remove("SSL_CERT_DIR")
        .status()
        .unwrap();
    assert!(status.success(), "the child run failed: {status}");
}

#[test]
fn mongodb_urls_give_the_mongodb_backend_sync_and_async() {
    let Some(server) = fixtures::shared_mongo() else {
        return;
    };
    // One server, not the one-node replica set it reports: no topology discovery.
    let uri = format!("{}?directConnection=true", server.uri());
    let backend = leader::connect(&uri).unwrap();
    assert_eq!(backend.kind(), "mongodb");
    let witness = leader::MongoBackend::connect(&uri).unwrap();
    exercise(backend, Some(&witness));

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let backend = runtime.block_on(leader::connect_async(&uri)).unwrap();
    // The client lives on the backend's own runtime: it outlives the caller's.
    drop(runtime);
    exercise(backend, Some(&witness));
}

#[test]
fn a_wrong_password_is_a_backend_error_that_does_not_show_it() {
    let Some(server) = fixtures::shared_redis() else {
        return;
    };
    let url = server.url();
    let host = url.trim_start_matches("redis://");
    let backend = leader::connect(&format!("redis://nobody:sesame-9f3@{host}")).unwrap();
    let elector = LeaderElector::new(backend, options("a")).unwrap();
    let err = elector
        .run_if_leader(fresh_name("auth").as_str(), || ())
        .unwrap_err();
    assert!(matches!(err, leader::Error::Backend(_)), "{err:?}");
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    assert!(!chain.contains("sesame-9f3"), "{chain}");
}

#[test]
fn bad_mongodb_uris_are_typed_errors_without_the_password() {
    let err = leader::connect("mongodb://user:sesame-9f3@/?replicaSet=").unwrap_err();
    assert!(matches!(err, leader::ConnectError::Mongo { .. }), "{err:?}");
    let text = format!("{err} {err:?}");
    assert!(!text.contains("sesame-9f3"), "{text}");
}

#[test]
fn postgres_urls_give_the_postgres_backend_sync_and_async() {
    let Some(server) = leader_rig::fixtures::shared_postgres() else {
        return;
    };
    let url = server.url();
    let backend = leader::connect(&url).unwrap();
    assert_eq!(backend.kind(), "postgres");
    let witness = leader::PostgresBackend::connect(&url).unwrap();
    exercise(backend, Some(&witness));

    let postgresql = url.replacen("postgres://", "postgresql://", 1);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let backend = runtime
        .block_on(leader::connect_async(&postgresql))
        .unwrap();
    // The connections live on the backend's own runtime: it outlives the caller's.
    drop(runtime);
    exercise(backend, Some(&witness));
}

#[test]
fn bad_postgres_urls_are_typed_errors_without_the_password() {
    let err = leader::connect("postgres://user:sesame-9f3@db:notaport/app").unwrap_err();
    assert!(
        matches!(err, leader::ConnectError::Postgres { .. }),
        "{err:?}"
    );
    let text = format!("{err} {err:?}");
    assert!(!text.contains("sesame-9f3"), "{text}");
    let backend = leader::connect("postgresql://user:sesame-9f3@127.0.0.1:1/app").unwrap();
    assert!(!format!("{backend:?}").contains("sesame-9f3"));
}

#[test]
fn etcd_urls_give_the_etcd_backend_sync_and_async() {
    let Some(server) = leader_rig::fixtures::shared_etcd() else {
        return;
    };
    let url = server.url();
    let backend = leader::connect(&url).unwrap();
    assert_eq!(backend.kind(), "etcd");
    let witness = leader::EtcdBackend::connect(&url).unwrap();
    exercise(backend, Some(&witness));

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let backend = runtime
        .block_on(leader::connect_async(&format!("{url}/async")))
        .unwrap();
    // The client lives on the backend's own runtime: it outlives the caller's.
    drop(runtime);
    exercise(backend, None);
}

#[test]
fn bad_etcd_urls_are_typed_errors_without_the_password() {
    let err = leader::connect("etcd://user:sesame-9f3@db:notaport").unwrap_err();
    assert!(matches!(err, leader::ConnectError::Etcd { .. }), "{err:?}");
    let text = format!("{err} {err:?}");
    assert!(!text.contains("sesame-9f3"), "{text}");
    let backend = leader::connect("etcd://user:sesame-9f3@127.0.0.1:1,127.0.0.1:2").unwrap();
    assert!(!format!("{backend:?}").contains("sesame-9f3"));
}
