//! The backend contract suite against a three-master Redis Cluster (the test process's
//! shared `leader_rig::fixtures::shared_redis_cluster`),
//! on the blocking API and on the async API under every runtime.

use crate::common::RedisHarness;

// The async API is behind the crate's runtime features.
leader_testkit::contract_tests!(every_runtime, RedisHarness::cluster(), behind_features);

/// The read/write lock contract suite, on the same cluster and runtimes.
mod shared {
    use crate::common::RedisHarness;

    leader_testkit::shared_contract_tests!(every_runtime, RedisHarness::cluster(), behind_features);
}
