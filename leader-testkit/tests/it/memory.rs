//! The in-memory backend passes the whole contract suite, blocking and async.

use leader_testkit::{MemoryHarness, ThreadRunner};

leader_testkit::contract_tests!(
    memory_blocking,
    blocking,
    Some(MemoryHarness::new()),
    ThreadRunner
);
leader_testkit::contract_tests!(
    memory_async_inline,
    async,
    Some(MemoryHarness::new()),
    ThreadRunner
);

leader_testkit::shared_contract_tests!(every_runtime, Some(MemoryHarness::new()));
