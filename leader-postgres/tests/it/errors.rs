//! Bad URLs, settings and servers are clear, typed errors, and nothing is changed: a table
//! of the same name made by someone else, a role that may only read, a role or database
//! that does not exist, a server that is not there.

use std::time::Duration;

use crate::common::{Raw, assert_backend_error, config, must_acquire, url};
use leader_core::{AcquireRequest, LockBackend, LockName, OwnerToken, ReleaseRequest, Renewal};
use leader_postgres::{ConnectError, PostgresBackend, PostgresConfig};
use leader_rig::fixtures;
use leader_testkit::fresh_name;

fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest::new(key, OwnerToken::random(), "node", Duration::from_secs(30))
}

#[test]
fn bad_urls_and_settings_are_refused_before_anything_is_sent() {
    for bad in [
        "postgres://h:notaport/db",
        "postgres://h/db?sslmode=sometimes",
        "postgres://h/db?connect_timeout=soon",
        "not a url at all = =",
    ] {
        let err = PostgresBackend::connect(bad).unwrap_err();
        assert!(matches!(err, ConnectError::InvalidUrl(_)), "{bad}: {err:?}");
    }
    let err =
        PostgresBackend::connect_with("postgres://h/db", PostgresConfig::new().with_table("a.b.c"))
            .unwrap_err();
    assert!(matches!(err, ConnectError::InvalidTable { .. }), "{err:?}");
    assert!(err.to_string().contains("a.b.c"), "{err}");
    let err =
        PostgresBackend::connect_with("postgres://h/db", PostgresConfig::new().with_pool_size(0))
            .unwrap_err();
    assert!(matches!(err, ConnectError::InvalidConfig(_)), "{err:?}");
}

#[test]
fn a_server_that_is_not_there_is_a_transient_error_naming_the_lock() {
    // A port nothing listens on: connection refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let backend =
        PostgresBackend::connect_with(&format!("postgres://app@127.0.0.1:{port}/app"), config("x"))
            .unwrap();
    let key = fresh_name("refused");
    assert_backend_error(backend.try_acquire(request(&key)), &key, true);
}

#[test]
fn a_table_of_the_same_name_made_by_someone_else_is_refused_and_left_as_it_was() {
    let Some(url) = url() else { return };
    let raw = Raw::connect(&url);
    raw.execute(
        "DROP TABLE IF EXISTS app_jobs;
         CREATE TABLE app_jobs (id serial PRIMARY KEY, note text);
         INSERT INTO app_jobs (note) VALUES ('mine');",
    );
    let backend = PostgresBackend::connect_with(&url, config("app_jobs")).unwrap();
    let key = fresh_name("foreign");
    let result = backend.try_acquire(request(&key));
    assert_backend_error(result, &key, false);
    let err = backend.state(&key).unwrap_err();
    assert!(err.to_string().contains("app_jobs"), "{err}");
    let rows = raw.rows("SELECT note FROM app_jobs");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, String>(0), "mine");
    let columns =
        raw.rows("SELECT count(*) FROM information_schema.columns WHERE table_name = 'app_jobs'");
    assert_eq!(columns[0].get::<_, i64>(0), 2, "no column was added");

    // Close, but with the token as an integer: refused as well.
    raw.execute(
        "DROP TABLE IF EXISTS near_locks;
         CREATE TABLE near_locks (name text PRIMARY KEY, owner text, leader_id text NOT NULL,
             fencing_token integer NOT NULL, acquired_at timestamptz NOT NULL,
             expires_at timestamptz NOT NULL);",
    );
    let backend = PostgresBackend::connect_with(&url, config("near_locks")).unwrap();
    let err = backend.try_acquire(request(&key)).unwrap_err();
    assert!(!err.is_transient(), "{err}");
    assert!(err.to_string().contains("fencing_token"), "{err}");
}

#[test]
fn a_role_that_may_only_read_gets_permanent_errors_and_changes_nothing() {
    let Some(server) = fixtures::shared_postgres() else {
        return;
    };
    let raw = Raw::connect(&server.url());
    let writer = PostgresBackend::connect_with(&server.url(), config("guarded_locks")).unwrap();
    let key = fresh_name("read-only");
    let lease = must_acquire(&writer, &key, "writer", Duration::from_secs(30));
    raw.execute(
        "DO $$ BEGIN
             IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'reader') THEN
                 CREATE ROLE reader LOGIN;
             END IF;
         END $$;
         GRANT SELECT ON guarded_locks TO reader;",
    );
    let before = raw.rows("SELECT owner, expires_at::text FROM guarded_locks ORDER BY name");

    let reader =
        PostgresBackend::connect_with(&server.url_as("reader"), config("guarded_locks")).unwrap();
    // Reading works: the table is there and readable.
    let state = reader.state(&key).unwrap();
    assert_eq!(state.leader().unwrap().fencing_token, lease.fencing_token);
    // Writing is refused, permanently, naming the lock.
    let other = fresh_name("read-only-other");
    assert_backend_error(reader.try_acquire(request(&other)), &other, false);
    assert_backend_error(
        reader.release(ReleaseRequest::new(&lease, Duration::ZERO)),
        &key,
        false,
    );
    let err = reader
        .extend(Renewal::new(&lease, Duration::from_secs(60)).with_db_time(true))
        .unwrap_err();
    assert!(err.to_string().contains("42501"), "{err}");

    let after = raw.rows("SELECT owner, expires_at::text FROM guarded_locks ORDER BY name");
    let as_text = |rows: &[tokio_postgres::Row]| {
        rows.iter()
            .map(|row| (row.get::<_, Option<String>>(0), row.get::<_, String>(1)))
            .collect::<Vec<_>>()
    };
    assert_eq!(as_text(&before), as_text(&after), "nothing changed");

    // A role that may not even create the missing table it is pointed at.
    let err = PostgresBackend::connect_with(&server.url_as("reader"), config("reader_made_locks"))
        .unwrap()
        .try_acquire(request(&other))
        .unwrap_err();
    assert!(!err.is_transient(), "{err}");
    assert!(
        raw.rows("SELECT to_regclass('reader_made_locks')::text")[0]
            .get::<_, Option<String>>(0)
            .is_none()
    );
}

#[test]
fn an_unknown_role_or_database_is_a_permanent_error() {
    let Some(server) = fixtures::shared_postgres() else {
        return;
    };
    let key = fresh_name("auth");
    let nobody =
        PostgresBackend::connect_with(&server.url_as("no_such_role"), config("x")).unwrap();
    assert_backend_error(nobody.state(&key), &key, false);
    let url = server.url().replace("/postgres", "/no_such_db");
    let missing = PostgresBackend::connect_with(&url, config("x")).unwrap();
    assert_backend_error(missing.state(&key), &key, false);
}

/// Nodes that start together on a table nobody made yet each make it or find it made:
/// PostgreSQL reports a racing `CREATE TABLE` as a duplicate table, a unique violation on
/// its catalog, or a duplicate type (42710), and none of them is a failure.
#[test]
fn nodes_starting_together_on_a_new_table_all_come_up() {
    let Some(url) = url() else { return };
    for round in 0..8 {
        let table = format!("race_{}_{round}", std::process::id());
        let start = std::sync::Arc::new(std::sync::Barrier::new(6));
        let nodes: Vec<_> = (0..6)
            .map(|_| {
                let (url, table, start) =
                    (url.clone(), table.clone(), std::sync::Arc::clone(&start));
                std::thread::spawn(move || {
                    let backend = PostgresBackend::connect_with(&url, config(&table)).unwrap();
                    let key = fresh_name("race");
                    start.wait();
                    LockBackend::state(&backend, &key).map(|_| ())
                })
            })
            .collect();
        for node in nodes {
            let answer = node.join().unwrap();
            assert!(
                answer.is_ok(),
                "round {round}: a node failed on the new table: {answer:?}"
            );
        }
    }
}
