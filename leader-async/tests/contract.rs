//! The contract suite on `InMemoryBackend` through the async trait, under every runtime.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use leader_testkit::{AsyncStdRunner, MemoryHarness, SmolRunner, TokioRunner};

leader_testkit::contract_tests!(
    tokio_current_thread,
    async,
    Some(MemoryHarness::new()),
    TokioRunner::current_thread()
);
leader_testkit::contract_tests!(
    tokio_multi_thread,
    async,
    Some(MemoryHarness::new()),
    TokioRunner::multi_thread()
);
leader_testkit::contract_tests!(async_std, async, Some(MemoryHarness::new()), AsyncStdRunner);
leader_testkit::contract_tests!(smol, async, Some(MemoryHarness::new()), SmolRunner);
