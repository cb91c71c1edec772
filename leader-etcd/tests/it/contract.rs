//! The backend contract suite on the shared three-member cluster: the blocking API on
//! plain threads, the async API on tokio (current-thread and multi-thread), async-std and
//! smol.

use crate::common::EtcdHarness;

leader_testkit::contract_tests!(every_runtime, EtcdHarness::new());
