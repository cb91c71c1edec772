//! The backend contract suite through Redis Sentinel (the test process's shared master,
//! replica and three sentinels, never failed over here: `tests/it/sentinel.rs` fails
//! them over), on the blocking API and on the async API (tokio and smol).

use crate::common::RedisHarness;

leader_testkit::contract_tests!(
    blocking_threads,
    blocking,
    RedisHarness::sentinel(),
    leader_testkit::ThreadRunner
);
#[cfg(feature = "tokio")]
leader_testkit::contract_tests!(
    async_tokio_current_thread,
    async,
    RedisHarness::sentinel(),
    leader_testkit::TokioRunner::current_thread()
);
#[cfg(feature = "smol")]
leader_testkit::contract_tests!(
    async_smol,
    async,
    RedisHarness::sentinel(),
    leader_testkit::SmolRunner
);

/// The read/write lock contract suite, through the same sentinels and runtimes.
mod shared {
    use crate::common::RedisHarness;

    leader_testkit::shared_contract_tests!(
        blocking_threads,
        blocking,
        RedisHarness::sentinel(),
        leader_testkit::ThreadRunner
    );
    #[cfg(feature = "tokio")]
    leader_testkit::shared_contract_tests!(
        async_tokio_current_thread,
        async,
        RedisHarness::sentinel(),
        leader_testkit::TokioRunner::current_thread()
    );
    #[cfg(feature = "smol")]
    leader_testkit::shared_contract_tests!(
        async_smol,
        async,
        RedisHarness::sentinel(),
        leader_testkit::SmolRunner
    );
}
