//! The backend contract suite against a three-master Redis Cluster (the test process's
//! shared `leader_testkit::fixtures::shared_redis_cluster`),
//! on the blocking API and on the async API under every runtime.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::RedisHarness;
use leader_testkit::ThreadRunner;

leader_testkit::contract_tests!(blocking, blocking, RedisHarness::cluster(), ThreadRunner);

#[cfg(feature = "tokio")]
leader_testkit::contract_tests!(
    tokio_current_thread,
    async,
    RedisHarness::cluster(),
    leader_testkit::TokioRunner::current_thread()
);

#[cfg(feature = "tokio")]
leader_testkit::contract_tests!(
    tokio_multi_thread,
    async,
    RedisHarness::cluster(),
    leader_testkit::TokioRunner::multi_thread()
);

#[cfg(feature = "async-std")]
leader_testkit::contract_tests!(
    async_std,
    async,
    RedisHarness::cluster(),
    leader_testkit::AsyncStdRunner
);

#[cfg(feature = "smol")]
leader_testkit::contract_tests!(
    smol,
    async,
    RedisHarness::cluster(),
    leader_testkit::SmolRunner
);
