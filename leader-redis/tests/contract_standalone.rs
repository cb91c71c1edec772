//! The backend contract suite against a standalone Redis (the test process's shared
//! `leader_testkit::fixtures::shared_redis`),
//! on the blocking API and on the async API under every runtime.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::RedisHarness;
use leader_testkit::ThreadRunner;

leader_testkit::contract_tests!(blocking, blocking, RedisHarness::standalone(), ThreadRunner);

#[cfg(feature = "tokio")]
leader_testkit::contract_tests!(
    tokio_current_thread,
    async,
    RedisHarness::standalone(),
    leader_testkit::TokioRunner::current_thread()
);

#[cfg(feature = "tokio")]
leader_testkit::contract_tests!(
    tokio_multi_thread,
    async,
    RedisHarness::standalone(),
    leader_testkit::TokioRunner::multi_thread()
);

#[cfg(feature = "async-std")]
leader_testkit::contract_tests!(
    async_std,
    async,
    RedisHarness::standalone(),
    leader_testkit::AsyncStdRunner
);

#[cfg(feature = "smol")]
leader_testkit::contract_tests!(
    smol,
    async,
    RedisHarness::standalone(),
    leader_testkit::SmolRunner
);
