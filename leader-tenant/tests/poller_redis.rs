//! The tenant pollers over Redis (the test process's shared redis-server; skipped without
//! one unless `LEADER_TEST_REQUIRE_SERVERS=1`): three instances x 50 tenants, exactly once
//! per cycle.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{Runs, assert_one_winner_per_tenant, options, tenants, unique_job};
use leader_async::AsyncLeaderElector;
use leader_blocking::{LeaderElector, ThreadPoolLeaderElector};
use leader_core::{LeaseContext, LockBackend, LockName, LockStatus};
use leader_redis::RedisBackend;
use leader_tenant::{AsyncTenantPoller, OutcomeKind, PollerConfig, TenantId};
use leader_testkit::fixtures;

fn redis_url() -> Option<String> {
    fixtures::shared_redis().map(|server| server.url())
}

#[test]
fn three_scheduled_instances_fifty_tenants_run_each_job_exactly_once_per_cycle() {
    let Some(url) = redis_url() else { return };
    // One backend (and connection pool) per instance, as separate processes would have.
    let pools = (0..3)
        .map(|i| {
            let backend = RedisBackend::connect(&url).unwrap();
            ThreadPoolLeaderElector::new(backend, options(&format!("node-{i}")), 4).unwrap()
        })
        .collect();
    common::scheduled_instances_run_each_job_once(
        pools,
        &unique_job("sync"),
        &tenants(50),
        Duration::from_millis(500),
        4,
    );
}

#[test]
fn three_async_instances_fifty_tenants_run_each_job_exactly_once_per_cycle() {
    let Some(url) = redis_url() else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let interval = Duration::from_millis(500);
        let job_name = unique_job("async-sync");
        let names = tenants(50);
        let runs = Runs::default();
        let pollers: Vec<_> = (0..3)
            .map(|i| {
                let backend = RedisBackend::connect(&url).unwrap();
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
fn the_tenant_prefix_is_physical_in_redis() {
    let Some(url) = redis_url() else { return };
    let elector = LeaderElector::new(RedisBackend::connect(&url).unwrap(), options("a")).unwrap();
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
