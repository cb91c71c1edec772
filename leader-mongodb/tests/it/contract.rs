//! The backend contract suite against the test server (the test process's shared
//! `leader_rig::fixtures::shared_mongo`): the
//! blocking API on plain threads, the async API on tokio (current-thread and multi-thread),
//! async-std and smol; the read/write locks' contract (`shared_contract_tests!`) in `shared`.

use crate::common::MongoHarness;

leader_testkit::contract_tests!(every_runtime, MongoHarness::from_env());

/// The read/write locks' checks, in a module of their own (the same runtime modules).
mod shared {
    use crate::common::MongoHarness;

    leader_testkit::shared_contract_tests!(every_runtime, MongoHarness::from_env());
}
