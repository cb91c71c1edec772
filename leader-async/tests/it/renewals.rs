//! Renewals of the async elector on every runtime: a lease is renewed one interval after
//! the request that took it was sent, also when it was won in a batch and its action starts
//! late or has not started yet, as the blocking elector does.

use std::time::{Duration, Instant};

use leader_async::{AsyncAcquired, AsyncLeaderElector};
use leader_core::{InMemoryBackend, LeaderElectionOptions, TenantId};
use leader_testkit::{Runner, sleep};

leader_testkit::on_every_runtime!(
    a_batch_lease_whose_action_starts_late_is_renewed_in_time,
    a_batch_lease_waiting_to_run_is_renewed_from_when_it_was_taken,
);

const LEASE: Duration = Duration::from_millis(900);

fn elector(store: &InMemoryBackend, node: &str) -> AsyncLeaderElector<InMemoryBackend> {
    let options = LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(LEASE)
        .with_auto_extend(true);
    AsyncLeaderElector::new(store.clone(), options).unwrap()
}

async fn sleep_until(at: Instant) {
    sleep(at.saturating_duration_since(Instant::now())).await;
}

/// Node a wins both tenants' locks in one batch: the instant before it was sent, and the locks.
async fn win_both(
    a: &AsyncLeaderElector<InMemoryBackend>,
) -> (Instant, Vec<AsyncAcquired<InMemoryBackend>>) {
    let tenants = [TenantId::new("t1").unwrap(), TenantId::new("t2").unwrap()];
    let taken_at = Instant::now();
    let won = a
        .try_acquire_for_tenants("job", &tenants)
        .await
        .into_iter()
        .map(|answer| answer.unwrap().expect("a free lock"))
        .collect();
    (taken_at, won)
}

/// Whether node `b` is elected for `tenant`'s lock now.
async fn b_elected(b: &AsyncLeaderElector<InMemoryBackend>, tenant: &str) -> bool {
    let scoped = b.for_tenant(tenant).unwrap();
    scoped
        .run_if_leader("job", || async {})
        .await
        .unwrap()
        .is_some()
}

fn a_batch_lease_whose_action_starts_late_is_renewed_in_time<R: Runner>(runner: &R) {
    let store = InMemoryBackend::new();
    let (a, b) = (elector(&store, "a"), elector(&store, "b"));
    runner.block_on(async {
        let (taken_at, mut won) = win_both(&a).await;
        let late = won.pop().unwrap();
        // Its action starts past two thirds of the lease, when the first renewal is due...
        sleep_until(taken_at + LEASE * 4 / 5).await;
        let outcome = late
            .run(|lease| async move {
                // ... and runs past the end of the lease the batch took.
                sleep_until(taken_at + LEASE * 11 / 10).await;
                Ok::<_, ()>((b_elected(&b, "t2").await, lease.is_lost()))
            })
            .await
            .expect("renewed in time, the lease was live when its action started");
        let lease_lost = outcome.lease_lost();
        let (other_elected, lost) = outcome.into_value().expect("elected");
        assert!(
            !other_elected,
            "another node was elected while the action ran"
        );
        assert!(
            !lost && !lease_lost,
            "the lease was lost while the action ran"
        );
    });
}

fn a_batch_lease_waiting_to_run_is_renewed_from_when_it_was_taken<R: Runner>(runner: &R) {
    let store = InMemoryBackend::new();
    let (a, b) = (elector(&store, "a"), elector(&store, "b"));
    runner.block_on(async {
        let (taken_at, mut won) = win_both(&a).await;
        let waiting = won.remove(0);
        // Longer than the whole lease before its action runs: renewed meanwhile.
        sleep_until(taken_at + LEASE * 3 / 2).await;
        assert!(!waiting.is_lost(), "lost while waiting to run");
        assert!(
            !b_elected(&b, "t1").await,
            "another node took a lock waiting to run"
        );
        let outcome = waiting
            .run(|_| async { Ok::<_, ()>(()) })
            .await
            .expect("renewed while waiting, the lease was live when its action started");
        assert!(outcome.is_elected() && !outcome.lease_lost(), "{outcome:?}");
        // Dropped without running: released in the background, and renewed no more.
        drop(won);
        let started = Instant::now();
        while !b_elected(&b, "t2").await {
            assert!(
                started.elapsed() < LEASE / 2,
                "the dropped lock was not released"
            );
            sleep(Duration::from_millis(5)).await;
        }
    });
}
