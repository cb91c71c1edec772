//! The backend contract suite on the shared server: the blocking API on plain threads,
//! the async API on tokio (current-thread and multi-thread), async-std and smol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::PostgresHarness;
use leader_testkit::{AsyncStdRunner, SmolRunner, ThreadRunner, TokioRunner};

leader_testkit::contract_tests!(
    blocking_threads,
    blocking,
    PostgresHarness::new(),
    ThreadRunner
);
leader_testkit::contract_tests!(
    async_tokio_current_thread,
    async,
    PostgresHarness::new(),
    TokioRunner::current_thread()
);
leader_testkit::contract_tests!(
    async_tokio_multi_thread,
    async,
    PostgresHarness::new(),
    TokioRunner::multi_thread()
);
leader_testkit::contract_tests!(
    async_async_std,
    async,
    PostgresHarness::new(),
    AsyncStdRunner
);
leader_testkit::contract_tests!(async_smol, async, PostgresHarness::new(), SmolRunner);
