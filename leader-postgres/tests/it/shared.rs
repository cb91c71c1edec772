//! Read/write locks on PostgreSQL, beyond the contract suite: one statement per call
//! (counted by `pg_stat_statements`), a release waking another node's waiters through
//! `NOTIFY`, a schema-qualified table, and a record garbled by hand that is a permanent
//! error and stays as it was.

use std::time::Duration;

use crate::common::{Raw, config, private_server, url};
use leader_core::{
    AcquireRequest, Backend, Error, Lease, LockName, MaxReaders, OwnerToken, ReleaseOutcome,
    ReleaseRequest, Renewal, Role, SharedLockBackend, SharedOutcome, SharedRequest,
};
use leader_postgres::PostgresBackend;
use leader_rig::fixtures::Data;
use leader_testkit::fresh_name;

const LEASE: Duration = Duration::from_secs(60);

fn ask(backend: &PostgresBackend, key: &LockName, role: Role) -> SharedOutcome {
    let request = AcquireRequest::new(key, OwnerToken::random(), "node", LEASE);
    backend
        .try_acquire_shared(SharedRequest::new(request, role, MaxReaders::DEFAULT))
        .unwrap()
}

fn granted(outcome: SharedOutcome) -> Lease {
    match outcome {
        SharedOutcome::Acquired(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// An uncontended read or write acquire is one statement on the server, and so are a
/// renewal, a release and a snapshot: `pg_stat_statements` (top-level statements) counts
/// every statement the backend's sessions send.
#[test]
fn each_read_write_call_is_one_statement() {
    let Some(mut server) = private_server() else {
        return;
    };
    server
        .psql("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        .unwrap();
    server.restart(Data::Keep).unwrap();
    server
        .psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .unwrap();
    let backend = PostgresBackend::connect_with(
        &server.url(),
        config("counted_locks").with_release_notifications(false),
    )
    .unwrap();
    // The session is opened, the tables made and the statements prepared first.
    backend.state_shared(&fresh_name("warm-up")).unwrap();
    // Each statement the sessions sent since the last reset, on one line: its calls,
    // then its text with every run of white space made one space.
    let statements = || -> Vec<(String, i64)> {
        let out = server
            .psql(
                "SELECT calls || ' ' || regexp_replace(query, '\\s+', ' ', 'g')
                 FROM pg_stat_statements
                 WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY query",
            )
            .unwrap();
        out.lines()
            .filter(|line| !line.is_empty())
            .map(|line| {
                let (calls, query) = line.split_once(' ').unwrap();
                (query.to_owned(), calls.parse().unwrap())
            })
            .collect()
    };
    for role in [Role::Read, Role::Write] {
        server.psql("SELECT pg_stat_statements_reset()").unwrap();
        let key = fresh_name("counted");
        let lease = granted(ask(&backend, &key, role));
        let acquired = statements();
        backend
            .extend_shared(Renewal::new(&lease, LEASE), role)
            .unwrap();
        backend
            .release_shared(ReleaseRequest::new(&lease, Duration::ZERO), role)
            .unwrap();
        backend.state_shared(&key).unwrap();
        let all = statements();
        eprintln!("{role:?}: after the acquire {acquired:?}; after all four calls {all:?}");
        assert_eq!(
            acquired.len(),
            1,
            "{role:?}: one statement for the acquire: {acquired:?}"
        );
        assert_eq!(acquired[0].1, 1, "{role:?}: sent once: {acquired:?}");
        assert!(
            acquired[0].0.contains("counted_locks_rw_v2"),
            "{acquired:?}"
        );
        assert_eq!(
            all.len(),
            1,
            "{role:?}: every call is that statement: {all:?}"
        );
        assert_eq!(
            all[0].1, 4,
            "{role:?}: four calls, four statements: {all:?}"
        );
    }
}

/// The usual calls are cheap inside the function too: an uncontended acquire of a name
/// taken before, and the release of that hold, each run two statements in it (the name's
/// row lock, and one statement that reads the holders and writes the grant or the free),
/// as `pg_stat_statements` counts them with `track = all`. Each statement (and each
/// PL/pgSQL expression) is set up again in every call's transaction: the first version of
/// the function ran nine to ten per acquire and six per release, and its read cycle took
/// 1.8 times an exclusive lock's.
#[test]
fn the_usual_acquire_and_release_run_two_statements_in_the_function() {
    let Some(mut server) = private_server() else {
        return;
    };
    server
        .psql("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        .unwrap();
    server.restart(Data::Keep).unwrap();
    // Known once the library is loaded; read by the server as it starts.
    server
        .psql("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
        .unwrap();
    server.restart(Data::Keep).unwrap();
    server
        .psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .unwrap();
    let backend = PostgresBackend::connect_with(
        &server.url(),
        config("nested_locks").with_release_notifications(false),
    )
    .unwrap();
    for role in [Role::Read, Role::Write] {
        let key = fresh_name("nested");
        // The name's row is made by its first acquire.
        let first = granted(ask(&backend, &key, role));
        backend
            .release_shared(ReleaseRequest::new(&first, Duration::ZERO), role)
            .unwrap();
        server.psql("SELECT pg_stat_statements_reset()").unwrap();
        let lease = granted(ask(&backend, &key, role));
        let released = backend
            .release_shared(ReleaseRequest::new(&lease, Duration::ZERO), role)
            .unwrap();
        assert_eq!(released, ReleaseOutcome::Released, "{role:?}");
        let nested = server
            .psql(
                "SELECT coalesce(sum(calls), 0) || ' ' || coalesce(string_agg(calls || ' '
                     || left(regexp_replace(query, '\\s+', ' ', 'g'), 60), '; '), '')
                 FROM pg_stat_statements
                 WHERE NOT toplevel AND query NOT LIKE '%pg_stat_statements%'",
            )
            .unwrap();
        let (count, statements) = nested.split_once(' ').unwrap_or((&nested, ""));
        let count: i64 = count.parse().unwrap();
        assert_eq!(
            count, 4,
            "{role:?}: two statements in the function per call: {statements}"
        );
    }
}

/// A release that frees a hold notifies the table's channel: another node's waiter on
/// that name wakes, without waiting for its next poll.
#[test]
fn a_release_by_another_node_wakes_its_waiters() {
    let Some(url) = url() else { return };
    let holder = PostgresBackend::connect_with(&url, config("rw_notify_locks")).unwrap();
    let waiter = PostgresBackend::connect_with(&url, config("rw_notify_locks")).unwrap();
    // Asking for the events starts the `LISTEN` session.
    assert!(waiter.release_events().is_some());
    leader_testkit::wait_until("LISTEN to come up", Duration::from_secs(10), || {
        waiter.is_listening()
    });
    for role in [Role::Read, Role::Write] {
        let key = fresh_name("rw-notify");
        let lease = granted(ask(&holder, &key, role));
        let woken = waiter.release_events().unwrap().listen(key.as_str());
        holder
            .release_shared(ReleaseRequest::new(&lease, Duration::ZERO), role)
            .unwrap();
        assert!(
            woken.wait_timeout(Duration::from_secs(5)),
            "{role:?}: the other node's waiter was not woken"
        );
    }
}

/// A table in a schema of its own, with capitals: the read/write tables and function are
/// made beside it, quoted alike.
#[test]
fn a_schema_qualified_table_gets_its_read_write_tables_beside_it() {
    let Some(url) = url() else { return };
    let raw = Raw::connect(&url);
    raw.execute("CREATE SCHEMA IF NOT EXISTS \"RwOps\"");
    let backend = PostgresBackend::connect_with(&url, config("RwOps.Locks")).unwrap();
    let key = fresh_name("rw-schema");
    let reader = granted(ask(&backend, &key, Role::Read));
    assert!(matches!(
        ask(&backend, &key, Role::Write),
        SharedOutcome::Queued(_)
    ));
    let rows = raw.rows(&format!(
        "SELECT count(*) FROM \"RwOps\".\"Locks_rw_hold\" WHERE name = '{}'",
        key.as_str()
    ));
    assert_eq!(rows[0].get::<_, i64>(0), 1);
    backend
        .release_shared(ReleaseRequest::new(&reader, Duration::ZERO), Role::Read)
        .unwrap();
}

/// The rows of `key` in both tables of `table`, as text, to compare before and after.
fn rows(raw: &Raw, table: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        format!("SELECT {table}_rw::text FROM {table}_rw WHERE name = '{key}'"),
        format!(
            "SELECT h::text FROM {table}_rw_hold AS h WHERE name = '{key}'
             ORDER BY fencing_token"
        ),
    ] {
        out.extend(raw.rows(&sql).iter().map(|row| row.get::<_, String>(0)));
    }
    out
}

/// Values this backend never writes, planted by hand: every call on the lock is a
/// permanent error naming it, and nothing is rewritten.
#[test]
fn a_garbled_read_write_record_is_a_permanent_error_and_stays_as_it_was() {
    let Some(url) = url() else { return };
    const TABLE: &str = "rw_garbled_locks";
    let backend = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    let raw = Raw::connect(&url);
    for (case, sql) in [
        (
            "a role other than read or write",
            "UPDATE {t}_rw_hold SET role = 'admin' WHERE name = '{k}'",
        ),
        (
            "a negative fencing token",
            "UPDATE {t}_rw_hold SET fencing_token = -3 WHERE name = '{k}'",
        ),
        (
            "an owner that is no token",
            "UPDATE {t}_rw_hold SET owner = 'somebody' WHERE name = '{k}'",
        ),
        (
            "half an intent",
            "UPDATE {t}_rw SET intent_leader_id = 'w' WHERE name = '{k}'",
        ),
        (
            "a negative counter",
            "UPDATE {t}_rw SET last_token = -1 WHERE name = '{k}'",
        ),
        (
            "a token above the counter",
            "UPDATE {t}_rw_hold SET fencing_token = fencing_token + 1000000000
             WHERE name = '{k}'",
        ),
        (
            "two writers",
            "INSERT INTO {t}_rw_hold
                 SELECT name, fencing_token - 1, 'write', owner, leader_id, acquired_at,
                     expires_at, false
                 FROM {t}_rw_hold WHERE name = '{k}'",
        ),
    ] {
        let key = fresh_name("rw-garbled");
        let writer = granted(ask(&backend, &key, Role::Write));
        raw.execute(&sql.replace("{t}", TABLE).replace("{k}", key.as_str()));
        let before = rows(&raw, TABLE, key.as_str());
        let permanent = |result: Result<(), Error>| {
            let message = result.as_ref().err().map(ToString::to_string);
            crate::common::assert_backend_error(result, &key, false);
            let message = message.unwrap_or_default();
            assert!(message.contains("corrupted lock row"), "{case}: {message}");
        };
        for role in [Role::Read, Role::Write] {
            let request = AcquireRequest::new(&key, OwnerToken::random(), "n", LEASE);
            let request = SharedRequest::new(request, role, MaxReaders::DEFAULT);
            permanent(backend.try_acquire_shared(request).map(|_| ()));
            permanent(
                backend
                    .extend_shared(Renewal::new(&writer, LEASE), role)
                    .map(|_| ()),
            );
            permanent(
                backend
                    .release_shared(ReleaseRequest::new(&writer, Duration::ZERO), role)
                    .map(|_| ()),
            );
        }
        permanent(backend.state_shared(&key).map(|_| ()));
        assert_eq!(
            rows(&raw, TABLE, key.as_str()),
            before,
            "{case}: the record must stay as it was"
        );
    }
    // Holders whose lock's row is gone: an acquire (which would make the row) refuses.
    let key = fresh_name("rw-orphan");
    granted(ask(&backend, &key, Role::Read));
    raw.execute(&format!(
        "DELETE FROM {TABLE}_rw WHERE name = '{}'",
        key.as_str()
    ));
    let request = AcquireRequest::new(&key, OwnerToken::random(), "n", LEASE);
    let result = backend.try_acquire_shared(SharedRequest::write(request));
    crate::common::assert_backend_error(result.map(|_| ()), &key, false);
    assert_eq!(rows(&raw, TABLE, key.as_str()).len(), 1, "the holder stays");
}

/// A role that may not create tables, given only the lock and records tables (made for it
/// by an older release, say): its exclusive locks work, and its read/write calls fail
/// with the reason, permanently; once someone made the read/write tables and granted
/// them, its calls work (after one transient error that replaces the session).
#[test]
fn a_role_that_may_not_make_the_read_write_tables_keeps_its_exclusive_locks() {
    let Some(server) = leader_rig::fixtures::shared_postgres() else {
        return;
    };
    const TABLE: &str = "granted_locks";
    let raw = Raw::connect(&server.url());
    let admin = PostgresBackend::connect_with(&server.url(), config(TABLE)).unwrap();
    leader_core::LockBackend::state(&admin, &fresh_name("make-the-tables")).unwrap();
    raw.execute(&format!(
        "DO $$ BEGIN
             IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'locker') THEN
                 CREATE ROLE locker LOGIN;
             END IF;
         END $$;
         DROP FUNCTION {TABLE}_rw_v2;
         DROP TABLE {TABLE}_rw, {TABLE}_rw_hold;
         GRANT SELECT, INSERT, UPDATE ON {TABLE}, {TABLE}_records TO locker;"
    ));
    let locker = PostgresBackend::connect_with(&server.url_as("locker"), config(TABLE)).unwrap();
    let key = fresh_name("granted");
    crate::common::must_acquire(&locker, &key, "locker", LEASE);
    let request = AcquireRequest::new(&key, OwnerToken::random(), "n", LEASE);
    let refused = locker.try_acquire_shared(SharedRequest::write(request));
    let message = refused.as_ref().err().map(ToString::to_string);
    crate::common::assert_backend_error(refused, &key, false);
    assert!(message.unwrap_or_default().contains("42501"));

    // Someone who may makes them, and grants them.
    let admin = PostgresBackend::connect_with(&server.url(), config(TABLE)).unwrap();
    admin.state_shared(&key).unwrap();
    raw.execute(&format!(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON {TABLE}_rw, {TABLE}_rw_hold TO locker;"
    ));
    let request = AcquireRequest::new(&key, OwnerToken::random(), "n", LEASE);
    let first = locker.try_acquire_shared(SharedRequest::write(request));
    assert!(
        first.as_ref().is_err_and(Error::is_transient),
        "the session opened without the function is replaced: {first:?}"
    );
    granted(
        locker
            .try_acquire_shared(SharedRequest::write(request))
            .unwrap(),
    );
}
