//! Fencing at the resource (`leader_redis::fence`), what only Redis's fence has: any
//! command fenced, a failing command, tokens beyond a Lua number, a corrupt fence key, and
//! a cluster's async path. Real acquisitions of one lock hand out the tokens; the fenced
//! writes go to a standalone server (blocking) and to a cluster (async). That a holder
//! whose lease ran out cannot overwrite what the next holder wrote on a single server is
//! tested with real electors, beside MongoDB's fence, by the facade's
//! `leader/tests/resource_fence.rs`.

use std::time::{Duration, Instant};

use crate::common::RedisHarness;
use leader_core::{
    AcquireOutcome, AcquireRequest, Lease, LockBackend, LockName, OwnerToken, ReleaseRequest,
};
use leader_redis::RedisBackend;
use leader_redis::fence::{Fence, FenceError, FenceOutcome};
use leader_testkit::fresh_name;

/// Acquires `key` for `holder`, waiting (up to 10 s) for an earlier lease to run out.
fn acquire(backend: &RedisBackend, key: &LockName, holder: &str, lease_time: Duration) -> Lease {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let request = AcquireRequest::new(key, OwnerToken::random(), holder, lease_time);
        match LockBackend::try_acquire(backend, request).unwrap() {
            AcquireOutcome::Acquired(lease) => return lease,
            AcquireOutcome::Held(_) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => panic!("{holder} could not acquire {key}: {other:?}"),
        }
    }
}

/// Holder A's lease runs out (A never releases: it was paused); B acquires. Their tokens.
fn two_terms(backend: &RedisBackend, key: &LockName) -> (u64, u64) {
    let a = acquire(backend, key, "node-a", Duration::from_millis(300));
    let b = acquire(backend, key, "node-b", Duration::from_secs(30));
    assert!(
        b.fencing_token > a.fencing_token,
        "{} then {}",
        a.fencing_token,
        b.fencing_token
    );
    LockBackend::release(backend, ReleaseRequest::new(&b, Duration::ZERO)).unwrap();
    (a.fencing_token, b.fencing_token)
}

/// The resource's keys for `key`: the fence and the data, in one slot through `{name}`.
fn resource(key: &LockName) -> (String, String) {
    (format!("{{{key}}}:fence"), format!("{{{key}}}:report"))
}

fn get(con: &mut dyn redis::ConnectionLike, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(con).unwrap()
}

#[test]
fn any_command_can_be_fenced() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let mut con = harness.raw();
    let key = fresh_name("resource-fence-cmd");
    let (fence_key, _) = resource(&key);
    let counts = format!("{{{key}}}:counts");
    let (ta, tb) = two_terms(&backend, &key);

    let hincr = |by: i64| ("HINCRBY", counts.clone(), "rows", by);
    let new = Fence::new(&fence_key, tb).command(hincr(5), [&counts]);
    assert_eq!(new.invoke(&mut con).unwrap(), FenceOutcome::Accepted);
    let old = Fence::new(&fence_key, ta).command(hincr(100), [&counts]);
    assert_eq!(
        old.invoke(&mut con).unwrap(),
        FenceOutcome::Rejected { highest_seen: tb }
    );
    let rows: i64 = redis::cmd("HGET")
        .arg(&counts)
        .arg("rows")
        .query(&mut con)
        .unwrap();
    assert_eq!(rows, 5);
}

#[test]
fn a_command_that_fails_changes_neither_the_data_nor_the_fence() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let mut con = harness.raw();
    let key = fresh_name("resource-fence-fail");
    let (fence_key, data) = resource(&key);
    let _: () = redis::cmd("SET")
        .arg(&data)
        .arg("text")
        .query(&mut con)
        .unwrap();

    // HSET on a string key: WRONGTYPE, raised by the command inside the script.
    let write = Fence::new(&fence_key, 42).command(("HSET", &data, "f", "v"), [&data]);
    let err = write.invoke(&mut con).unwrap_err();
    assert!(matches!(err, FenceError::Redis(_)), "{err:?}");
    assert!(!err.is_transient(), "{err}");
    assert_eq!(get(&mut con, &fence_key), None, "the fence was not raised");
    assert_eq!(get(&mut con, &data).as_deref(), Some("text"));
}

#[test]
fn tokens_are_compared_exactly_beyond_what_a_lua_number_holds() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let mut con = harness.raw();
    let key = fresh_name("resource-fence-big");
    let (fence_key, data) = resource(&key);
    // 2^53 + 1 and 2^53 are one and the same double.
    let high = (1_u64 << 53) + 1;
    let write = |token: u64, value: &str| {
        Fence::new(&fence_key, token)
            .set(&data, value)
            .invoke(&mut harness.raw())
            .unwrap()
    };
    assert_eq!(write(high, "high"), FenceOutcome::Accepted);
    assert_eq!(
        write(high - 1, "lower"),
        FenceOutcome::Rejected { highest_seen: high }
    );
    assert_eq!(write(u64::MAX, "max"), FenceOutcome::Accepted);
    assert_eq!(
        write(u64::MAX - 1, "lower"),
        FenceOutcome::Rejected {
            highest_seen: u64::MAX
        }
    );
    assert_eq!(get(&mut con, &data).as_deref(), Some("max"));
}

#[test]
fn a_fence_key_holding_something_else_is_a_typed_error_and_nothing_is_written() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let mut con = harness.raw();
    let key = fresh_name("resource-fence-corrupt");
    let (fence_key, data) = resource(&key);

    for bad in ["not-a-token", "-5", "1.5e15", "18446744073709551616", ""] {
        let _: () = redis::cmd("SET")
            .arg(&fence_key)
            .arg(bad)
            .query(&mut con)
            .unwrap();
        let err = Fence::new(&fence_key, 7)
            .set(&data, "x")
            .invoke(&mut con)
            .unwrap_err();
        match &err {
            FenceError::CorruptFence { key, found } => {
                assert_eq!(key, &fence_key);
                assert!(found.contains(bad), "{found}");
            }
            other => panic!("{bad:?}: expected CorruptFence, got {other:?}"),
        }
        assert!(!err.is_transient());
    }

    let _: () = redis::cmd("DEL").arg(&fence_key).query(&mut con).unwrap();
    let _: () = redis::cmd("HSET")
        .arg(&fence_key)
        .arg("f")
        .arg(1)
        .query(&mut con)
        .unwrap();
    let err = Fence::new(&fence_key, 7)
        .set(&data, "x")
        .invoke(&mut con)
        .unwrap_err();
    assert!(
        matches!(&err, FenceError::CorruptFence { found, .. } if found.contains("hash")),
        "{err:?}"
    );
    assert_eq!(get(&mut con, &data), None, "nothing was written");
}

#[cfg(feature = "tokio")]
#[test]
fn on_a_cluster_the_async_path_rejects_a_stale_holder_too() {
    let Some(harness) = RedisHarness::cluster() else {
        return;
    };
    let Some(cluster) = leader_rig::fixtures::shared_redis_cluster() else {
        return;
    };
    let urls = cluster.urls();
    let backend = harness.make();
    let key = fresh_name("resource-fence-cluster");
    let (fence_key, data) = resource(&key);
    let (ta, tb) = two_terms(&backend, &key);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = redis::cluster::ClusterClient::new(urls).unwrap();
        let mut con = client.get_async_connection().await.unwrap();
        let write = |token: u64, value: &str| Fence::new(&fence_key, token).set(&data, value);

        assert!(
            write(ta, "a")
                .invoke_async(&mut con)
                .await
                .unwrap()
                .is_accepted()
        );
        assert!(
            write(tb, "b")
                .invoke_async(&mut con)
                .await
                .unwrap()
                .is_accepted()
        );
        assert_eq!(
            write(ta, "a-late").invoke_async(&mut con).await.unwrap(),
            FenceOutcome::Rejected { highest_seen: tb }
        );
        let stored: String = redis::cmd("GET")
            .arg(&data)
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(stored, "b");

        // Keys in different slots: the cluster refuses, and says so as an error.
        let slot = |key: String| async {
            let slot: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(&key)
                .query_async(&mut con.clone())
                .await
                .unwrap();
            (slot, key)
        };
        let (fence_slot, _) = slot(fence_key.clone()).await;
        let mut other = None;
        for i in 0.. {
            let (s, candidate) = slot(format!("{{{key}-{i}}}:report")).await;
            if s != fence_slot {
                other = Some(candidate);
                break;
            }
        }
        let other = other.unwrap();
        let crossed = Fence::new(&fence_key, tb).set(&other, "x");
        assert!(crossed.invoke_async(&mut con).await.is_err());
    });
}
