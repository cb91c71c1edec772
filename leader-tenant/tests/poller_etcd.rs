//! The tenant pollers over etcd (the test process's shared one-member etcd; skipped
//! without one unless `LEADER_TEST_REQUIRE_SERVERS=1`): three instances x 50 tenants,
//! exactly once per cycle, each cycle one batch of concurrent transactions.
//!
//! Cycles of 2 s with a guard of 400 ms: an etcd write waits for its fsync, and on a
//! loaded machine a batch's answer can come hundreds of milliseconds later; a lock won
//! after the cycle's locks are freed does not run (the poller's "Exactly once per
//! cycle"), so shorter cycles would test the machine, not the poller.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{Runs, assert_one_winner_per_tenant, options, tenants, unique_job};
use leader_async::AsyncLeaderElector;
use leader_blocking::{LeaderElector, ThreadPoolLeaderElector};
use leader_core::{LeaseContext, LockBackend, LockName, LockStatus};
use leader_etcd::EtcdBackend;
use leader_tenant::{AsyncTenantPoller, OutcomeKind, PollerConfig, TenantId};
use leader_testkit::fixtures;

const INTERVAL: Duration = Duration::from_secs(2);

fn etcd_url() -> Option<String> {
    fixtures::shared_etcd().map(|server| format!("{}/pollers", server.url()))
}

#[test]
fn three_scheduled_instances_fifty_tenants_run_each_job_exactly_once_per_cycle() {
    let Some(url) = etcd_url() else { return };
    // One backend (and client) per instance, as separate processes would have.
    let pools = (0..3)
        .map(|i| {
            let backend = EtcdBackend::connect(&url).unwrap();
            ThreadPoolLeaderElector::new(backend, options(&format!("node-{i}")), 4).unwrap()
        })
        .collect();
    common::scheduled_instances_run_each_job_once(
        pools,
        &unique_job("sync"),
        &tenants(50),
        INTERVAL,
        4,
    );
}

#[test]
fn three_async_instances_fifty_tenants_run_each_job_exactly_once_per_cycle() {
    let Some(url) = etcd_url() else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let interval = INTERVAL;
        let job_name = unique_job("async-sync");
        let names = tenants(50);
        let runs = Runs::default();
        let pollers: Vec<_> = (0..3)
            .map(|i| {
                let backend = EtcdBackend::connect(&url).unwrap();
                let elector =
                    AsyncLeaderElector::new(backend, options(&format!("node-{i}"))).unwrap();
                let config = PollerConfig::new(job_name.as_str(), interval)
                    .with_concurrency(8)
                    .with_cycle_end_guard(interval / 5);
                let (names, runs) = (names.clone(), runs.clone());
                let job = move |tenant: TenantId, _lease: LeaseContext| {
                    let runs = runs.clone();
                    async move {
                        runs.record(&tenant);
                        Ok::<_, String>(())
                    }
                };
                AsyncTenantPoller::new(&elector, config, move || names.clone(), job).unwrap()
            })
            .collect();
        for round in 0..3 {
            runs.set_round(round);
            // Start each round just after a cycle boundary, as a scheduler would.
            tokio::time::sleep(common::until_next_boundary(interval) + Duration::from_millis(5))
                .await;
            let (a, (b, c)) = futures_lite::future::zip(
                pollers[0].run_cycle(),
                futures_lite::future::zip(pollers[1].run_cycle(), pollers[2].run_cycle()),
            )
            .await;
            let reports = [a, b, c];
            for report in &reports {
                assert_eq!(report.count(OutcomeKind::Error), 0, "{report}");
            }
            runs.assert_exactly_once(round, &names);
            assert_one_winner_per_tenant(&reports, &names);
        }
    });
}

#[test]
fn the_tenant_prefix_is_physical_in_etcd() {
    let Some(url) = etcd_url() else { return };
    let elector = LeaderElector::new(EtcdBackend::connect(&url).unwrap(), options("a")).unwrap();
    let acme = elector.for_tenant("acme").unwrap();
    let job = unique_job("physical");
    acme.run_if_leader(&job, || {
        let key = LockName::new(format!("tenant:acme:{job}")).unwrap();
        let physical = LockBackend::state(elector.backend().as_ref(), &key).unwrap();
        assert_eq!(physical.status(), LockStatus::Occupied);
        assert_eq!(physical.lock_name(), format!("tenant:acme:{job}"));
        assert_eq!(acme.state(&job).unwrap().lock_name(), job);
        assert_eq!(elector.state(&job).unwrap().status(), LockStatus::Empty);
    })
    .unwrap()
    .unwrap();
}
