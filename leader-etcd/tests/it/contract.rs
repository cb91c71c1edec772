//! The backend contract suite on the shared three-member cluster: the blocking API on
//! plain threads, the async API on tokio (current-thread and multi-thread), async-std and
//! smol; and the read/write lock suite, in the same forms.

use crate::common::EtcdHarness;

leader_testkit::contract_tests!(every_runtime, EtcdHarness::new());

/// The read/write lock suite (its modules are named as the exclusive suite's); their
/// expiry is etcd's leases too, so the harness waits etcd's expiry sweep as for locks
/// (with less slack: its checks wait out whole-second leases only).
mod shared {
    use crate::common::EtcdHarness;

    leader_testkit::shared_contract_tests!(every_runtime, EtcdHarness::shared());
}
