//! The index of a name's derived locks (`{prefix}:{<name>}:derived`), on one server and on
//! a cluster: a listing of `<name>#...` reads it in one call, never counts a member whose
//! record is gone however it went (expired, released, force-released, deleted by hand) and
//! drops such members; a lost index is rebuilt by the next acquire (a candidate's next
//! heartbeat); a corrupted index is a typed error, never a panic.

use std::time::Duration;

use crate::common::RedisHarness;
use leader_core::{
    AcquireOutcome, AcquireRequest, BackendErrorKind, Error, ForceReleaseOutcome, ListRequest,
    LockBackend, LockName, OwnerToken, ReleaseRequest,
};
use leader_redis::RedisBackend;
use leader_testkit::{fresh_name, wait_until};

const LONG: Duration = Duration::from_secs(60);

fn record(base: &LockName, rank: u32) -> LockName {
    base.derive(&format!("rank:{rank:010}:{:016x}", u64::from(rank)))
        .unwrap()
}

fn take(backend: &RedisBackend, key: &LockName, owner: OwnerToken, lease: Duration) {
    let outcome = backend
        .try_acquire(AcquireRequest::new(key, owner, "node", lease))
        .unwrap();
    assert!(
        matches!(outcome, AcquireOutcome::Acquired(_)),
        "{outcome:?}"
    );
}

fn listed(backend: &RedisBackend, prefix: &str) -> Vec<String> {
    let page = backend.list(&ListRequest::new(prefix)).unwrap();
    assert!(page.next.is_none(), "a few records fit one page");
    page.locks
        .iter()
        .map(|s| s.lock_name().to_owned())
        .collect()
}

fn index_of(base: &LockName) -> String {
    format!("leader:{{{base}}}:derived")
}

fn members(conn: &mut dyn redis::ConnectionLike, base: &LockName) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(index_of(base))
        .arg(0)
        .arg(-1)
        .query(conn)
        .unwrap()
}

fn gone_records_are_not_candidates(harness: &RedisHarness) {
    let backend = harness.make();
    let mut conn = harness.raw_routed();
    let base = fresh_name("index");
    let owner = OwnerToken::random();
    let [live, expired, released, forced, deleted] = [1, 2, 3, 4, 5].map(|r| record(&base, r));
    for key in [&live, &released, &forced, &deleted] {
        take(&backend, key, owner, LONG);
    }
    take(&backend, &expired, owner, Duration::from_millis(200));
    assert_eq!(
        members(&mut *conn, &base).len(),
        5,
        "each record is indexed"
    );

    let lease = backend
        .try_acquire(AcquireRequest::new(&released, owner, "node", LONG))
        .unwrap();
    let AcquireOutcome::Acquired(lease) = lease else {
        panic!("{lease:?}")
    };
    backend
        .release(ReleaseRequest::new(&lease, Duration::ZERO))
        .unwrap();
    assert!(matches!(
        backend.force_release(&forced).unwrap(),
        ForceReleaseOutcome::Released(_)
    ));
    let _: () = redis::cmd("DEL")
        .arg(backend.lock_key(&deleted))
        .query(&mut *conn)
        .unwrap();
    let expired_key = backend.lock_key(&expired);
    wait_until("the short record expired", Duration::from_secs(5), || {
        let exists: bool = redis::cmd("EXISTS")
            .arg(&expired_key)
            .query(&mut *conn)
            .unwrap();
        !exists
    });

    let prefix = format!("{base}#rank:");
    assert_eq!(listed(&backend, &prefix), [live.to_string()]);
    assert_eq!(
        members(&mut *conn, &base),
        [live.as_str().split_once('#').unwrap().1],
        "the listing dropped the members whose record is gone"
    );

    // Lost (deleted by hand, evicted): the next acquire of a record adds it back, as a
    // candidate's next heartbeat does.
    let _: () = redis::cmd("DEL")
        .arg(index_of(&base))
        .query(&mut *conn)
        .unwrap();
    assert!(listed(&backend, &prefix).is_empty());
    take(&backend, &live, owner, LONG);
    assert_eq!(listed(&backend, &prefix), [live.to_string()]);

    // Another type of value at the index: a permanent error naming it, for listing and
    // for taking a derived name alike; nothing is written.
    let _: () = redis::cmd("DEL")
        .arg(index_of(&base))
        .query(&mut *conn)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(index_of(&base))
        .arg("x")
        .query(&mut *conn)
        .unwrap();
    let failed = backend
        .list(&ListRequest::new(prefix.as_str()))
        .unwrap_err();
    assert_permanent_at(&failed, &index_of(&base));
    let slot = base.derive("1").unwrap();
    let failed = backend
        .try_acquire(AcquireRequest::new(&slot, owner, "node", LONG))
        .unwrap_err();
    assert!(matches!(&failed, Error::Backend(err) if err.kind() == BackendErrorKind::Permanent));
    assert!(backend.state(&slot).unwrap().leader().is_none());
    // The name itself is no derived name: it never touches the index.
    take(&backend, &base, owner, LONG);
}

fn assert_permanent_at(err: &Error, key: &str) {
    match err {
        Error::Backend(err) => {
            assert_eq!(err.kind(), BackendErrorKind::Permanent, "{err}");
            assert!(err.to_string().contains(key), "{err}");
        }
        other => panic!("a backend error, got {other:?}"),
    }
}

#[test]
fn gone_records_are_not_candidates_on_one_server() {
    if let Some(harness) = RedisHarness::standalone() {
        gone_records_are_not_candidates(&harness);
    }
}

#[test]
fn gone_records_are_not_candidates_on_a_cluster() {
    if let Some(harness) = RedisHarness::cluster() {
        gone_records_are_not_candidates(&harness);
    }
}

/// Pages through many records: each page is one call over its members, and together they
/// list every live record once, in name order.
#[test]
fn pages_of_an_index_list_each_record_once_in_name_order() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let base = fresh_name("pages");
    let mut expected = Vec::new();
    for rank in 0..25 {
        let key = record(&base, rank);
        take(&backend, &key, OwnerToken::random(), LONG);
        expected.push(key.to_string());
    }
    let mut request = ListRequest::new(format!("{base}#rank:")).with_limit(4);
    let mut seen = Vec::new();
    loop {
        let page = backend.list(&request).unwrap();
        assert!(page.locks.len() <= 4);
        seen.extend(page.locks.iter().map(|s| s.lock_name().to_owned()));
        match page.next {
            Some(cursor) => request = request.after(cursor),
            None => break,
        }
    }
    assert_eq!(seen, expected);
}
