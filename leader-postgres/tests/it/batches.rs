//! The batch forms on PostgreSQL, one statement per 1,000 requests: nodes whose batches
//! cover the same locks in different orders wait for each other but never deadlock, each
//! lock goes to one of them, and a batch release notifies the waiters of other nodes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::common::{config, url};
use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, Lease, LockBackend, LockName, OwnerToken,
    ReleaseOutcome, ReleaseRequest,
};
use leader_postgres::PostgresBackend;
use leader_testkit::fresh_name;
use rand::seq::SliceRandom;

const TABLE: &str = "batch_locks";
const LOCKS: usize = 2500;
const NODES: usize = 3;

/// Every lock of `names` tried by `node` in one batch, in an order of its own; the leases
/// it got. Any error fails the test: a deadlock would be one (SQLSTATE 40P01).
fn take(backend: &PostgresBackend, names: &[LockName], node: &str) -> Vec<Lease> {
    let mut order: Vec<&LockName> = names.iter().collect();
    order.shuffle(&mut rand::rng());
    let requests: Vec<AcquireRequest<'_>> = order
        .iter()
        .map(|name| AcquireRequest::new(name, OwnerToken::random(), node, Duration::from_secs(60)))
        .collect();
    let answers = LockBackend::try_acquire_batch(backend, &requests);
    assert_eq!(answers.len(), requests.len());
    answers
        .into_iter()
        .filter_map(|answer| match answer {
            Ok(AcquireOutcome::Acquired(lease)) => Some(lease),
            Ok(AcquireOutcome::Held(Some(holder))) => {
                assert_ne!(holder.leader_id, node, "a node holds nothing twice");
                None
            }
            Ok(AcquireOutcome::Held(None)) => None,
            Ok(other) => panic!("{node}: {other:?}"),
            Err(err) => panic!("{node}: {err}"),
        })
        .collect()
}

#[test]
fn batches_of_several_nodes_over_the_same_locks_never_deadlock_and_grant_each_once() {
    let Some(url) = url() else { return };
    let backends: Vec<PostgresBackend> = (0..NODES)
        .map(|_| PostgresBackend::connect_with(&url, config(TABLE)).unwrap())
        .collect();
    let names: Vec<LockName> = (0..LOCKS).map(|_| fresh_name("batch")).collect();
    for round in 0..3 {
        let taken: Vec<Vec<Lease>> = std::thread::scope(|scope| {
            let threads: Vec<_> = backends
                .iter()
                .enumerate()
                .map(|(i, backend)| {
                    let names = &names;
                    scope.spawn(move || take(backend, names, &format!("node-{i}")))
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut owners: HashMap<&str, usize> = HashMap::new();
        for (node, leases) in taken.iter().enumerate() {
            for lease in leases {
                assert!(
                    owners.insert(lease.key.as_str(), node).is_none(),
                    "round {round}: {} granted twice",
                    lease.key
                );
            }
        }
        assert_eq!(
            owners.len(),
            LOCKS,
            "round {round}: every free lock is taken"
        );

        // Each node releases what it holds in one batch, in an order of its own, while the
        // others' next batches may already run.
        std::thread::scope(|scope| {
            for (backend, leases) in backends.iter().zip(&taken) {
                scope.spawn(move || {
                    let mut releases: Vec<ReleaseRequest<'_>> = leases
                        .iter()
                        .map(|lease| ReleaseRequest::new(lease, Duration::ZERO))
                        .collect();
                    releases.shuffle(&mut rand::rng());
                    for answer in LockBackend::release_batch(backend, &releases) {
                        assert_eq!(answer.unwrap(), ReleaseOutcome::Released);
                    }
                });
            }
        });
    }
}

#[test]
fn a_batch_release_notifies_the_waiters_of_other_nodes() {
    let Some(url) = url() else { return };
    let holder = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    let waiter = PostgresBackend::connect_with(&url, config(TABLE)).unwrap();
    let events = waiter.release_events().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !waiter.is_listening() {
        assert!(Instant::now() < deadline, "LISTEN did not come up");
        std::thread::sleep(Duration::from_millis(5));
    }
    let names: Vec<LockName> = (0..3).map(|_| fresh_name("batch-notify")).collect();
    let leases = take(&holder, &names, "holder");
    assert_eq!(leases.len(), 3);
    let listeners: Vec<_> = leases
        .iter()
        .map(|lease| (lease, events.listen(lease.key.as_str())))
        .collect();
    // One kept for a minimum lease: no notification for it, as for a single release.
    let releases: Vec<ReleaseRequest<'_>> = leases
        .iter()
        .enumerate()
        .map(|(i, lease)| {
            let min = if i == 2 {
                Duration::from_secs(30)
            } else {
                Duration::ZERO
            };
            ReleaseRequest::new(lease, min)
        })
        .collect();
    for answer in LockBackend::release_batch(&holder, &releases) {
        assert_eq!(answer.unwrap(), ReleaseOutcome::Released);
    }
    for (i, (lease, listener)) in listeners.into_iter().enumerate() {
        let notice =
            listener.wait_notice_timeout(Duration::from_millis(if i == 2 { 300 } else { 5000 }));
        if i == 2 {
            assert!(
                notice.is_none(),
                "a lock kept for its minimum lease notifies nobody"
            );
        } else {
            let notice = notice.expect("the batch release notified");
            assert_eq!(
                (notice.key(), notice.fencing_token()),
                (Some(lease.key.as_str()), Some(lease.fencing_token))
            );
        }
    }
}
