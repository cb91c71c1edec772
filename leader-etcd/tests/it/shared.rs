//! Read/write locks beyond the contract suite: how many requests a call costs (counted by
//! the member itself, on its `/metrics`, background lease revokes waited for), a release waking another node's waiters through
//! the watch, and a record of another shape refused and left as it was.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::common::{Raw, config, private_server};
use leader_core::{
    AcquireRequest, Backend, Error, LockName, MaxReaders, OwnerToken, ReleaseRequest, Renewal,
    Role, SharedLockBackend, SharedOutcome, SharedRequest,
};
use leader_etcd::EtcdBackend;
use leader_rig::fixtures;
use leader_testkit::fresh_name;

const LEASE: Duration = Duration::from_secs(30);

/// The requests the member at `addr` has started since it began, by method, for the KV
/// and lease services (`grpc_server_started_total`, read from `GET /metrics`).
fn requests(addr: SocketAddr) -> BTreeMap<String, u64> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let mut counts = BTreeMap::new();
    for line in answer.lines() {
        let Some(labels) = line.strip_prefix("grpc_server_started_total{") else {
            continue;
        };
        if !(labels.contains("grpc_service=\"etcdserverpb.KV\"")
            || labels.contains("grpc_service=\"etcdserverpb.Lease\""))
        {
            continue;
        }
        let method = labels
            .split("grpc_method=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap()
            .to_owned();
        let count: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        counts.insert(method, count as u64);
    }
    counts
}

/// The requests `call` made on the member at `addr`, by method (those it made none of
/// left out), once the `revokes` lease revokes it leaves to the background have come.
fn made(addr: SocketAddr, revokes: u64, call: impl FnOnce()) -> BTreeMap<String, u64> {
    let before = requests(addr);
    call();
    let since = || -> BTreeMap<String, u64> {
        requests(addr)
            .into_iter()
            .filter_map(|(method, after)| {
                let made = after - before.get(&method).copied().unwrap_or(0);
                (made > 0).then_some((method, made))
            })
            .collect()
    };
    leader_testkit::wait_until("the background revokes", Duration::from_secs(10), || {
        since().get("LeaseRevoke").copied().unwrap_or(0) >= revokes
    });
    since()
}

/// `grants` lease grants, `txns` transactions and `revokes` lease revokes.
fn trips(grants: u64, txns: u64, revokes: u64) -> BTreeMap<String, u64> {
    [
        ("LeaseGrant", grants),
        ("Txn", txns),
        ("LeaseRevoke", revokes),
    ]
    .into_iter()
    .filter(|(_, count)| *count > 0)
    .map(|(method, count)| (method.to_owned(), count))
    .collect()
}

fn ask(backend: &EtcdBackend, key: &LockName, role: Role) -> SharedOutcome {
    let request = AcquireRequest::new(key, OwnerToken::random(), "node", LEASE);
    backend
        .try_acquire_shared(SharedRequest::new(request, role, MaxReaders::DEFAULT))
        .unwrap()
}

/// A call that grants or renews a hold is a lease grant, then one transaction (as the
/// exclusive acquire and extend are); a refused acquire and a release are one transaction. A lease no hold is left on (a
/// refused acquire's, an extended or released hold's old one) is revoked in the
/// background.
#[test]
fn an_uncontended_read_or_write_is_a_lease_grant_and_one_transaction() {
    let Some(server) = private_server() else {
        return;
    };
    let addr = server.addr();
    let backend = EtcdBackend::connect_with(&server.url(), config("trips")).unwrap();
    // Connects, so that connecting is not counted below.
    backend.state_shared(&fresh_name("rw-trips")).unwrap();

    let (read, write) = (fresh_name("rw-trips"), fresh_name("rw-trips"));
    let mut reader = None;
    let mut made_now = made(addr, 0, || reader = Some(ask(&backend, &read, Role::Read)));
    assert_eq!(made_now, trips(1, 1, 0), "a read of a new lock");
    let Some(SharedOutcome::Acquired(reader)) = reader else {
        panic!("{reader:?}")
    };
    let mut writer = None;
    made_now = made(addr, 0, || {
        writer = Some(ask(&backend, &write, Role::Write))
    });
    assert_eq!(made_now, trips(1, 1, 0), "a write of a new lock");
    assert!(
        matches!(writer, Some(SharedOutcome::Acquired(_))),
        "{writer:?}"
    );

    // On a lock whose last change this backend made: one transaction each after the
    // grant, granted or queued (the intent is on the lease).
    for (role, what) in [
        (Role::Read, "a second reader"),
        (Role::Write, "a writer queued"),
    ] {
        assert_eq!(
            made(addr, 0, || drop(ask(&backend, &read, role))),
            trips(1, 1, 0),
            "{what}"
        );
    }
    // A refused read on a lock whose last change this backend saw: no lease asked for.
    assert_eq!(
        made(addr, 0, || drop(ask(&backend, &write, Role::Read))),
        trips(0, 1, 0),
        "a refused read"
    );
    let renewal = Renewal::new(&reader, LEASE);
    made_now = made(addr, 1, || {
        backend.extend_shared(renewal, Role::Read).unwrap();
    });
    assert_eq!(
        made_now,
        trips(1, 1, 1),
        "an extend (its old lease revoked)"
    );
    made_now = made(addr, 1, || {
        backend
            .release_shared(ReleaseRequest::new(&reader, Duration::ZERO), Role::Read)
            .unwrap();
    });
    assert_eq!(made_now, trips(0, 1, 1), "a release (its lease revoked)");

    // Another backend has not seen the lock's last change: its first call reads it in its
    // transaction's other branch, and decides again (refused: its lease revoked).
    let other = EtcdBackend::connect_with(&server.url(), config("trips")).unwrap();
    other.state_shared(&fresh_name("rw-trips")).unwrap();
    made_now = made(addr, 1, || drop(ask(&other, &write, Role::Read)));
    assert_eq!(
        made_now,
        trips(1, 2, 1),
        "a lock another backend changed last"
    );
}

#[test]
fn a_record_of_another_shape_is_refused_and_left_as_it_was() {
    let Some(server) = fixtures::shared_etcd() else {
        return;
    };
    let raw = Raw::connect(&[server.endpoint()], None);
    let backend = EtcdBackend::connect_with(&server.url(), config("rw-shapes")).unwrap();
    for garbage in [
        &b"\xff\xfe not UTF-8"[..],
        b"",
        b"v2 7",
        b"v2 7\nr 1 2 3 0 4 nothex 1 n\n",
        b"v1 7\n",
        b"v9 7\n",
    ] {
        let key = fresh_name("rw-shape");
        let path = format!("{}/shared/{key}", backend.prefix());
        raw.put(&path, garbage);
        let corrupt = |err: Error| {
            assert!(!err.is_transient(), "{err}");
            let text = err.to_string();
            assert!(text.contains("corrupted"), "{text}");
            assert!(text.contains(key.as_str()), "{text}");
        };
        for role in [Role::Read, Role::Write] {
            let request = AcquireRequest::new(&key, OwnerToken::random(), "node", LEASE);
            let request = SharedRequest::new(request, role, MaxReaders::DEFAULT);
            corrupt(backend.try_acquire_shared(request).unwrap_err());
        }
        corrupt(backend.state_shared(&key).unwrap_err());
        assert_eq!(
            raw.get(&path).as_deref(),
            Some(garbage),
            "the record was overwritten"
        );
    }
}

#[test]
fn a_release_by_another_node_wakes_that_locks_waiters_with_its_token() {
    let Some(server) = fixtures::shared_etcd() else {
        return;
    };
    let holder = EtcdBackend::connect_with(&server.url(), config("rw-notify")).unwrap();
    let waiter = EtcdBackend::connect_with(&server.url(), config("rw-notify")).unwrap();
    let events = waiter.release_events().unwrap();
    // The watch wakes every waiter once it is up: let that pass before listening.
    let started = events.listen("rw-notify-probe");
    assert!(
        started.wait_timeout(Duration::from_secs(10)),
        "the watch never started"
    );
    leader_testkit::wait_until("the watch to come up", Duration::from_secs(10), || {
        waiter.is_listening()
    });
    let key = fresh_name("rw-notify");
    let woken = events.listen(key.as_str());
    let Ok(SharedOutcome::Acquired(first)) = holder.try_acquire_shared(SharedRequest::read(
        AcquireRequest::new(&key, OwnerToken::random(), "r1", LEASE),
        MaxReaders::DEFAULT,
    )) else {
        panic!("the first reader is refused")
    };
    // A reader joining frees nothing; the first one leaving does.
    assert!(matches!(
        ask(&holder, &key, Role::Read),
        SharedOutcome::Acquired(_)
    ));
    holder
        .release_shared(ReleaseRequest::new(&first, Duration::ZERO), Role::Read)
        .unwrap();
    let notice = woken
        .wait_notice_timeout(Duration::from_secs(5))
        .expect("no wake-up after the release");
    assert_eq!(
        (notice.key(), notice.fencing_token()),
        (Some(key.as_str()), Some(first.fencing_token)),
        "the first notice is the release's"
    );
}
