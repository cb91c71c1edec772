//! The tenant pollers over etcd (the test process's shared one-member etcd; skipped
//! without one unless `LEADER_TEST_REQUIRE_SERVERS=1`): three instances x 50 tenants,
//! exactly once per cycle, each cycle one batch of concurrent transactions.
//!
//! Cycles of 2 s with a guard of 400 ms: an etcd write waits for its fsync, and on a
//! loaded machine a batch's answer can come hundreds of milliseconds later; a lock won
//! after the cycle's locks are freed does not run (the poller's "Exactly once per
//! cycle"), so shorter cycles would test the machine, not the poller.

use crate::common;

use std::time::Duration;

use crate::common::{options, tenants, unique_job};
use leader_blocking::ThreadPoolLeaderElector;
use leader_etcd::EtcdBackend;
use leader_rig::fixtures;

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
    common::async_instances_run_each_job_once(|| EtcdBackend::connect(&url).unwrap(), INTERVAL);
}

#[test]
fn the_tenant_prefix_is_physical_in_etcd() {
    let Some(url) = etcd_url() else { return };
    common::the_tenant_prefix_is_physical(EtcdBackend::connect(&url).unwrap());
}
