//! A tenant whose lock came back from its batch after the lease's deadline (a paused
//! process, a stalled server) runs nothing: the lock is released and the tenant's outcome
//! is the error `LeaseLost`, in the blocking and the async poller.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use leader_async::AsyncLeaderElector;
use leader_blocking::ThreadPoolLeaderElector;
use leader_core::{
    Error, InMemoryBackend, LeaderElectionOptions, LeaseContext, LockBackend, LockName,
};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_tenant::{
    AsyncTenantPoller, BlockingTenantPoller, CycleReport, OutcomeKind, PollerConfig, TenantError,
    TenantId, TenantOutcome,
};
use leader_testkit::wait_until;

/// The lease the pollers ask for.
const LEASE: Duration = Duration::from_millis(600);
/// How late the store applies and answers an acquire: past the lease.
const LATE: Duration = Duration::from_millis(800);
const TENANTS: [&str; 3] = ["acme", "globex", "initech"];

fn late_store() -> FaultyBackend<InMemoryBackend> {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    backend.set(Op::Acquire, Fault::Delay(LATE));
    backend
}

fn options() -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id("late")
        .with_lease_time(LEASE)
}

fn config() -> PollerConfig {
    PollerConfig::new("sync", Duration::from_secs(60)).with_min_lease_time(Duration::ZERO)
}

/// Every tenant's outcome is `LeaseLost` naming its lock, no job ran, and every lock is
/// free within half a lease of the cycle's end (released, not left to run out).
fn assert_lost_and_released<T: std::fmt::Debug, E: std::fmt::Debug>(
    report: &CycleReport<T, E>,
    ran: &AtomicUsize,
    store: &FaultyBackend<InMemoryBackend>,
    ended: Instant,
) {
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "a job ran on a lease already over"
    );
    assert_eq!(
        report.count(OutcomeKind::Error),
        TENANTS.len(),
        "{report:?}"
    );
    for tenant in TENANTS {
        let key = format!("tenant:{tenant}:sync");
        match &report.tenant(tenant).unwrap().outcome {
            TenantOutcome::Error(TenantError::Elector(Error::LeaseLost { key: lost })) => {
                assert_eq!(lost, &key);
            }
            other => panic!("{tenant}: expected LeaseLost, got {other:?}"),
        }
        let key = LockName::new(key).unwrap();
        wait_until("released", LEASE * 2, || {
            store.inner().state(&key).unwrap().leader().is_none()
        });
    }
    let took = ended.elapsed();
    assert!(
        took < LEASE / 2,
        "freed {took:?} after the cycle: ran out rather than released"
    );
}

#[test]
fn the_blocking_poller_runs_no_job_on_a_late_batch() {
    let store = late_store();
    let pool = ThreadPoolLeaderElector::new(store.clone(), options(), 2).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    let job = move |_tenant: TenantId, _lease: &LeaseContext| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>(())
    };
    let poller = BlockingTenantPoller::new(&pool, config(), || TENANTS, job).unwrap();
    let report = poller.run_cycle();
    assert_lost_and_released(&report, &ran, &store, Instant::now());
}

#[test]
fn the_async_poller_runs_no_job_on_a_late_batch() {
    let store = late_store();
    let elector = AsyncLeaderElector::new(store.clone(), options()).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    let job = move |_tenant: TenantId, _lease: LeaseContext| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, String>(()) }
    };
    let poller = AsyncTenantPoller::new(&elector, config(), || TENANTS, job).unwrap();
    let report = smol::block_on(poller.run_cycle());
    assert_lost_and_released(&report, &ran, &store, Instant::now());
}
