//! Many locks tried or released at once on Redis: a batch runs one script per 100 requests, answers each
//! request on its own (foreign data at one key fails only that request), and behaves as
//! the same requests one by one would, on the async side too.

use crate::common;

use std::time::Duration;

use crate::common::RedisHarness;
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Backend, LockBackend, LockName, OwnerToken,
    ReleaseOutcome, ReleaseRequest,
};
use leader_testkit::fresh_name;

const LEASE: Duration = Duration::from_secs(60);

#[test]
fn a_batch_is_one_script_per_hundred_requests_and_one_bad_key_fails_only_its_request() {
    // A server of its own: no other test's scripts count.
    let Some(server) = common::private_server() else {
        return;
    };
    let harness = RedisHarness::new(common::Servers::Single(server.url()));
    let backend = harness.make();
    let keys: Vec<LockName> = (0..250)
        .map(|n| fresh_name(&format!("batch-{n}")))
        .collect();
    let mut conn = harness.raw();
    // Key 7 holds a string, not a lock's hash; key 8 is held by another owner.
    let _: () = redis::cmd("SET")
        .arg(backend.storage_key(&keys[7]))
        .arg("not a lock")
        .query(&mut conn)
        .unwrap();
    let other = AcquireRequest::new(&keys[8], OwnerToken::random(), "node-b", LEASE);
    assert!(matches!(
        LockBackend::try_acquire(&backend, other),
        Ok(AcquireOutcome::Acquired(_))
    ));

    let requests: Vec<_> = keys
        .iter()
        .map(|key| AcquireRequest::new(key, OwnerToken::random(), "node-a", LEASE))
        .collect();
    let before = common::scripts_run(&mut conn);
    let answers = LockBackend::try_acquire_batch(&backend, &requests);
    assert_eq!(
        common::scripts_run(&mut conn) - before,
        3,
        "250 requests, 3 scripts"
    );
    assert_eq!(answers.len(), 250);
    for (n, answer) in answers.iter().enumerate() {
        match (n, answer) {
            (7, Err(err)) => {
                assert!(err.to_string().contains("WRONGTYPE"), "{err}");
                assert_eq!(err.lock_key(), Some(backend.storage_key(&keys[7]).as_str()));
            }
            (8, Ok(AcquireOutcome::Held(Some(holder)))) => assert_eq!(holder.leader_id, "node-b"),
            (_, Ok(AcquireOutcome::Acquired(lease))) if n != 7 && n != 8 => {
                assert_eq!((&lease.key, lease.owner), (&keys[n], requests[n].owner));
            }
            _ => panic!("request {n}: {answer:?}"),
        }
    }
}

#[test]
fn the_async_batch_answers_as_the_blocking_one() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let keys: Vec<LockName> = (0..150)
        .map(|n| fresh_name(&format!("async-batch-{n}")))
        .collect();
    let owners: Vec<_> = keys.iter().map(|_| OwnerToken::random()).collect();
    let requests: Vec<_> = keys
        .iter()
        .zip(&owners)
        .map(|(key, owner)| AcquireRequest::new(key, *owner, "node-a", LEASE))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let first = runtime.block_on(AsyncLockBackend::try_acquire_batch(&backend, &requests));
    assert!(
        first
            .iter()
            .all(|a| matches!(a, Ok(AcquireOutcome::Acquired(_)))),
        "{first:?}"
    );
    // Again with the same owners: each re-acquires its own lock, token kept.
    let again = runtime.block_on(AsyncLockBackend::try_acquire_batch(&backend, &requests));
    for (a, b) in first.iter().zip(&again) {
        let (Ok(AcquireOutcome::Acquired(a)), Ok(AcquireOutcome::Acquired(b))) = (a, b) else {
            panic!("{a:?} then {b:?}");
        };
        assert_eq!(a.fencing_token, b.fencing_token);
    }
}

#[test]
fn a_release_batch_is_one_script_per_hundred_leases_and_one_bad_key_fails_only_its_lease() {
    let Some(server) = common::private_server() else {
        return;
    };
    let harness = RedisHarness::new(common::Servers::Single(server.url()));
    let backend = harness.make();
    let keys: Vec<LockName> = (0..150)
        .map(|n| fresh_name(&format!("release-{n}")))
        .collect();
    let leases: Vec<_> = keys
        .iter()
        .map(|key| {
            let request = AcquireRequest::new(key, OwnerToken::random(), "node-a", LEASE);
            match LockBackend::try_acquire(&backend, request) {
                Ok(AcquireOutcome::Acquired(lease)) => lease,
                other => panic!("{other:?}"),
            }
        })
        .collect();
    let mut conn = harness.raw();
    // Lease 3's key now holds a string (replaced behind the backend's back).
    let _: () = redis::cmd("SET")
        .arg(backend.storage_key(&keys[3]))
        .arg("not a lock")
        .query(&mut conn)
        .unwrap();
    let releases: Vec<_> = leases
        .iter()
        .enumerate()
        .map(|(n, lease)| {
            let min_lease = if n % 2 == 0 {
                Duration::ZERO
            } else {
                LEASE / 2
            };
            ReleaseRequest::new(lease, min_lease)
        })
        .collect();
    // The server learns the script first (a NOSCRIPT retry would count twice).
    let warm = AcquireRequest::new(&keys[0], OwnerToken::random(), "node-a", LEASE);
    let warm_key = fresh_name("release-warm");
    if let Ok(AcquireOutcome::Acquired(lease)) =
        LockBackend::try_acquire(&backend, warm.with_key(&warm_key))
    {
        LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    }
    let before = common::scripts_run(&mut conn);
    let answers = LockBackend::release_batch(&backend, &releases);
    assert_eq!(
        common::scripts_run(&mut conn) - before,
        2,
        "150 leases, 2 scripts"
    );
    for (n, answer) in answers.iter().enumerate() {
        match (n, answer) {
            (3, Err(err)) => assert!(err.to_string().contains("WRONGTYPE"), "{err}"),
            (_, Ok(ReleaseOutcome::Released)) if n != 3 => {}
            _ => panic!("lease {n}: {answer:?}"),
        }
    }
    for (n, key) in keys.iter().enumerate().filter(|(n, _)| *n != 3) {
        let held = LockBackend::state(&backend, key)
            .unwrap()
            .leader()
            .is_some();
        assert_eq!(
            held,
            n % 2 == 1,
            "lease {n}: kept only for its minimum lease"
        );
    }
}
