//! The backend contract suite against the test server (the test process's shared
//! `leader_testkit::fixtures::shared_mongo`): the
//! blocking API on plain threads, the async API on tokio (current-thread and multi-thread),
//! async-std and smol.

mod common;

use common::MongoHarness;
use leader_testkit::{AsyncStdRunner, SmolRunner, ThreadRunner, TokioRunner};

leader_testkit::contract_tests!(
    blocking_threads,
    blocking,
    MongoHarness::from_env(),
    ThreadRunner
);
leader_testkit::contract_tests!(
    async_tokio_current_thread,
    async,
    MongoHarness::from_env(),
    TokioRunner::current_thread()
);
leader_testkit::contract_tests!(
    async_tokio_multi_thread,
    async,
    MongoHarness::from_env(),
    TokioRunner::multi_thread()
);
leader_testkit::contract_tests!(
    async_async_std,
    async,
    MongoHarness::from_env(),
    AsyncStdRunner
);
leader_testkit::contract_tests!(async_smol, async, MongoHarness::from_env(), SmolRunner);
