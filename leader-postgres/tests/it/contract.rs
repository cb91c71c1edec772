//! The backend contract suite on the shared server: the blocking API on plain threads,
//! the async API on tokio (current-thread and multi-thread), async-std and smol.

use crate::common::PostgresHarness;

leader_testkit::contract_tests!(every_runtime, PostgresHarness::new());
