//! The operator's calls on Redis: `list` pages through many locks spread over every
//! cluster master, among many other keys, on the blocking and the async API; a foreign
//! cursor is a typed error; a corrupted record is reported, not deleted. That a force release
//! wakes a waiting elector at once and the old holder learns of it at its next renewal is
//! checked on every backend by the facade's `leader/tests/operator.rs`.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::RedisHarness;
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ListCursor, ListPage, ListRequest,
    LockBackend, LockName, OwnerToken,
};
use leader_redis::RedisBackend;
use leader_testkit::fresh_name;

const LOCKS: usize = 120;
const LIMIT: usize = 7;

fn acquire(backend: &RedisBackend, name: &str, node: &str) {
    let key = LockName::new(name).unwrap();
    let request = AcquireRequest::new(&key, OwnerToken::random(), node, Duration::from_secs(60));
    let outcome = LockBackend::try_acquire(backend, request).unwrap();
    assert!(
        matches!(outcome, AcquireOutcome::Acquired(_)),
        "{outcome:?}"
    );
}

/// Thousands of keys that are not locks under the prefix, spread over the slots: other
/// applications' keys, locks under another prefix, and the fencing counters of the locks.
fn unrelated_keys(harness: &RedisHarness, prefix: &str) {
    let mut conn = harness.raw_routed();
    for tag in 0..30 {
        let mut mset = redis::cmd("MSET");
        for i in 0..100 {
            mset.arg(format!("noise:{{{tag}}}:{i}")).arg("x");
        }
        mset.query::<()>(conn.as_mut()).unwrap();
    }
    let backend = harness.make();
    for i in 0..20 {
        acquire(&backend, &format!("other:{prefix}{i}"), "elsewhere");
    }
}

/// Every page of `prefix` with `LIMIT`, through `list`; checks that each page but the last
/// holds at least `LIMIT` locks, and returns the names listed.
fn all_pages(mut list: impl FnMut(&ListRequest) -> ListPage, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut request = ListRequest::new(prefix).with_limit(LIMIT);
    let mut pages = 0;
    loop {
        let page = list(&request);
        pages += 1;
        assert!(pages <= LOCKS / LIMIT + 3, "too many pages: {pages}");
        names.extend(page.locks.iter().map(|s| s.lock_name().to_owned()));
        match page.next {
            Some(cursor) => {
                assert!(
                    page.locks.len() >= LIMIT,
                    "a page before the last holds {} locks",
                    page.locks.len()
                );
                request = request.after(cursor);
            }
            None => return names,
        }
    }
}

fn list_pages_through_many_locks(harness: &RedisHarness) {
    let backend = harness.make();
    let prefix = format!("{}:", fresh_name("many"));
    let expected: BTreeSet<String> = (0..LOCKS).map(|i| format!("{prefix}{i}")).collect();
    for name in &expected {
        acquire(&backend, name, "holder");
    }
    unrelated_keys(harness, &prefix);

    let blocking = all_pages(
        |request| LockBackend::list(&backend, request).unwrap(),
        &prefix,
    );
    assert_eq!(blocking, expected);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let asynchronous = all_pages(
        |request| {
            runtime
                .block_on(AsyncLockBackend::list(&backend, request))
                .unwrap()
        },
        &prefix,
    );
    assert_eq!(asynchronous, expected);
}

#[test]
fn a_cluster_lists_every_lock_of_every_master_in_pages() {
    if let Some(harness) = RedisHarness::cluster() {
        list_pages_through_many_locks(&harness);
    }
}

#[test]
fn a_single_server_lists_every_lock_in_pages() {
    if let Some(harness) = RedisHarness::standalone() {
        list_pages_through_many_locks(&harness);
    }
}

fn assert_bad_cursor(result: Result<ListPage, Error>) {
    match result {
        Err(err @ Error::Backend(_)) => {
            assert!(!err.is_transient(), "{err}");
            assert!(err.to_string().contains("cursor"), "{err}");
        }
        other => panic!("a foreign cursor must be a typed error, got {other:?}"),
    }
}

#[test]
fn a_foreign_cursor_is_a_typed_error() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let harnesses = [RedisHarness::cluster(), RedisHarness::standalone()];
    for (harness, foreign) in harnesses.into_iter().flatten().zip(["12", "0:12"]) {
        let backend = harness.make();
        for cursor in ["garbage", "-1", foreign] {
            let request = ListRequest::new("x").after(ListCursor::new(cursor));
            assert_bad_cursor(LockBackend::list(&backend, &request));
            assert_bad_cursor(runtime.block_on(AsyncLockBackend::list(&backend, &request)));
        }
    }
}

#[test]
fn a_corrupted_record_is_reported_and_left_alone() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut conn = harness.raw();
    let prefix = format!("{}:", fresh_name("corrupt"));
    let cases = [("forever", None, "7"), ("badfence", Some(60_000), "seven")];
    for (suffix, ttl, fence) in cases {
        let name = LockName::new(format!("{prefix}{suffix}")).unwrap();
        let key = backend.lock_key(&name);
        redis::cmd("HSET")
            .arg(&key)
            .arg(&[
                ("owner", "o"),
                ("leader", "n"),
                ("fence", fence),
                ("acq", "1"),
                ("exp", "2"),
            ])
            .query::<()>(&mut conn)
            .unwrap();
        if let Some(ms) = ttl {
            redis::cmd("PEXPIRE")
                .arg(&key)
                .arg(ms)
                .query::<()>(&mut conn)
                .unwrap();
        }
        let err = LockBackend::force_release(&backend, &name).unwrap_err();
        assert!(!err.is_transient(), "{err}");
        assert_eq!(err.lock_key(), Some(key.as_str()));
        let exists: bool = redis::cmd("EXISTS").arg(&key).query(&mut conn).unwrap();
        assert!(exists, "a corrupted record is not deleted");

        let listed = LockBackend::list(&backend, &ListRequest::new(name.as_str())).unwrap_err();
        assert!(!listed.is_transient(), "{listed}");
        assert_eq!(listed.lock_key(), Some(key.as_str()));
        redis::cmd("DEL").arg(&key).query::<()>(&mut conn).unwrap();
    }
}
