//! The backend contract suite on a database file: the blocking API on plain threads, the
//! async API on tokio (current-thread and multi-thread), async-std and smol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::SqliteHarness;
use leader_testkit::{AsyncStdRunner, SmolRunner, ThreadRunner, TokioRunner};

leader_testkit::contract_tests!(
    blocking_threads,
    blocking,
    SqliteHarness::new(),
    ThreadRunner
);
leader_testkit::contract_tests!(
    async_tokio_current_thread,
    async,
    SqliteHarness::new(),
    TokioRunner::current_thread()
);
leader_testkit::contract_tests!(
    async_tokio_multi_thread,
    async,
    SqliteHarness::new(),
    TokioRunner::multi_thread()
);
leader_testkit::contract_tests!(async_async_std, async, SqliteHarness::new(), AsyncStdRunner);
leader_testkit::contract_tests!(async_smol, async, SqliteHarness::new(), SmolRunner);
