//! The tenant pollers over Redis (the test process's shared redis-server; skipped without
//! one unless `LEADER_TEST_REQUIRE_SERVERS=1`): three instances x 50 tenants, exactly once
//! per cycle.

use crate::common;

use std::time::Duration;

use crate::common::{options, tenants, unique_job};
use leader_blocking::ThreadPoolLeaderElector;
use leader_redis::RedisBackend;
use leader_rig::fixtures;

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
    common::async_instances_run_each_job_once(
        || RedisBackend::connect(&url).unwrap(),
        Duration::from_millis(500),
    );
}

#[test]
fn the_tenant_prefix_is_physical_in_redis() {
    let Some(url) = redis_url() else { return };
    common::the_tenant_prefix_is_physical(RedisBackend::connect(&url).unwrap());
}
