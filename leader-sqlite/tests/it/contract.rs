//! The backend contract suite on a database file: the blocking API on plain threads, the
//! async API on tokio (current-thread and multi-thread), async-std and smol.

use crate::common::SqliteHarness;

leader_testkit::contract_tests!(every_runtime, SqliteHarness::new());
