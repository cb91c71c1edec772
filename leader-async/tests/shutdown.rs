//! No orphaned lock (guarantee 8 in ARCHITECTURE.md) when a tokio runtime shuts down: its tasks are dropped, queued or half-way,
//! and the releases they leave behind must still reach the store.
#![cfg(feature = "tokio")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use leader_async::AsyncLeaderElector;
use leader_core::{
    CampaignConfig, InMemoryBackend, LeaderElectionOptions, LeaseMode, ListRequest, LockBackend,
    LockName, LockStatus,
};
use leader_testkit::{Fault, FaultyBackend, Op, eventually, wait_until};
use tokio::runtime::{Builder, Runtime};
use tokio::sync::oneshot;

fn runtimes() -> [(&'static str, Runtime); 2] {
    [
        (
            "current-thread",
            Builder::new_current_thread().enable_all().build().unwrap(),
        ),
        (
            "multi-thread",
            Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        ),
    ]
}

fn elector(store: &InMemoryBackend) -> AsyncLeaderElector<InMemoryBackend> {
    let options = LeaderElectionOptions::default()
        .with_node_id("a")
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(60))
        .with_auto_extend(true);
    AsyncLeaderElector::new(store.clone(), options).unwrap()
}

/// The lock is free well before its 60 s lease would have run out.
fn freed_soon(store: &InMemoryBackend, what: &str) {
    let key = LockName::new("job").unwrap();
    wait_until(what, Duration::from_secs(2), || {
        LockBackend::state(store, &key).unwrap().status() == LockStatus::Empty
    });
}

#[test]
fn a_run_dropped_with_its_runtime_releases_its_lease() {
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let a = elector(&store);
        let (running, started) = oneshot::channel();
        runtime.block_on(async {
            tokio::spawn(async move {
                a.run_if_leader("job", || async move {
                    running.send(()).unwrap();
                    std::future::pending::<()>().await
                })
                .await
            });
            started.await.unwrap();
        });
        drop(runtime);
        freed_soon(&store, &format!("the release ({flavor})"));
    }
}

#[test]
fn a_guard_dropped_with_its_runtime_releases_its_lease() {
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let a = elector(&store);
        let (held, acquired) = oneshot::channel();
        runtime.block_on(async {
            tokio::spawn(async move {
                let guard = a.acquire("job", LeaseMode::watchdog()).await.unwrap();
                held.send(()).unwrap();
                std::future::pending::<()>().await;
                drop(guard);
            });
            acquired.await.unwrap();
        });
        drop(runtime);
        freed_soon(&store, &format!("the guard's release ({flavor})"));
    }
}

#[test]
fn a_campaign_whose_runtime_shuts_down_releases_its_term() {
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(60))
        .with_heartbeat(Duration::from_secs(1));
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let a = elector(&store);
        let handle = runtime.block_on(async {
            let handle = a.campaign("job", config).unwrap();
            handle.wait_for_term().await;
            handle
        });
        // A resignation started just before the shutdown, and the shutdown itself.
        let resigning = runtime.spawn(handle.resign());
        drop(resigning);
        drop(runtime);
        freed_soon(&store, &format!("the campaign's release ({flavor})"));
    }
}

#[test]
fn a_campaign_whose_runtime_shuts_down_mid_attempt_releases_what_the_attempt_took() {
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(60))
        .with_heartbeat(Duration::from_secs(1));
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        // The store applies the campaign's attempt, and the answer never comes back.
        let stalled = FaultyBackend::new(store.clone());
        stalled.set(Op::Acquire, Fault::ApplyThenStall);
        let options = LeaderElectionOptions::default().with_node_id("a");
        let a = AsyncLeaderElector::new(stalled.clone(), options).unwrap();
        let key = LockName::new("job").unwrap();
        let handle = runtime.block_on(async {
            let handle = a.campaign("job", config).unwrap();
            eventually("the attempt took the lock", Duration::from_secs(5), || {
                LockBackend::state(&store, &key).unwrap().status() != LockStatus::Empty
            })
            .await;
            handle
        });
        assert!(!handle.is_leader(), "the answer is still on its way");
        drop(runtime);
        freed_soon(
            &store,
            &format!("the in-flight attempt's release ({flavor})"),
        );
        drop(handle);
    }
}

/// A ranked campaign dropped with its runtime withdraws its membership record too (in the
/// background, as it releases its term), so its rank stops deferring the others at once.
#[test]
fn a_ranked_campaign_whose_runtime_shuts_down_withdraws_its_record() {
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(60))
        .with_heartbeat(Duration::from_secs(1))
        .with_rank(1);
    let prefix = ListRequest::new("job#rank:");
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let a = elector(&store);
        let handle = runtime.block_on(async {
            let handle = a.campaign("job", config).unwrap();
            handle.wait_for_term().await;
            handle
        });
        assert_eq!(LockBackend::list(&store, &prefix).unwrap().locks.len(), 1);
        drop(runtime);
        freed_soon(&store, &format!("the campaign's release ({flavor})"));
        wait_until(
            &format!("the record's release ({flavor})"),
            Duration::from_secs(2),
            || LockBackend::list(&store, &prefix).unwrap().locks.is_empty(),
        );
        drop(handle);
    }
}
