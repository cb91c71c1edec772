//! The backend contract suite on a database file: the blocking API on plain threads, the
//! async API on tokio (current-thread and multi-thread), async-std and smol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::SqliteHarness;

leader_testkit::contract_tests!(every_runtime, SqliteHarness::new());
