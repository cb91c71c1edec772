//! The backend contract suite on a database file: the blocking API on plain threads, the
//! async API on tokio (current-thread and multi-thread), async-std and smol; the
//! read/write locks' suite beside it.

use crate::common::SqliteHarness;

leader_testkit::contract_tests!(every_runtime, SqliteHarness::new());

/// Read/write locks (`SharedLockBackend`): the same forms, in a module of their own (the
/// macros name their modules after the runtimes).
mod shared {
    use crate::common::SqliteHarness;

    leader_testkit::shared_contract_tests!(every_runtime, SqliteHarness::new());
}
