//! The backend contract suite on the shared server: the blocking API on plain threads,
//! the async API on tokio (current-thread and multi-thread), async-std and smol.

use crate::common::PostgresHarness;

leader_testkit::contract_tests!(every_runtime, PostgresHarness::new());

/// Read/write locks (`SharedLockBackend`): the same forms, in a module of their own (the
/// macros name their modules after the runtimes).
mod shared {
    use crate::common::PostgresHarness;

    leader_testkit::shared_contract_tests!(every_runtime, PostgresHarness::new());
}
