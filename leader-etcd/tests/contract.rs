//! The backend contract suite on the shared three-member cluster: the blocking API on
//! plain threads, the async API on tokio (current-thread and multi-thread), async-std and
//! smol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::EtcdHarness;

leader_testkit::contract_tests!(every_runtime, EtcdHarness::new());
