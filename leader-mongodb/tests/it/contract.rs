//! The backend contract suite against the test server (the test process's shared
//! `leader_rig::fixtures::shared_mongo`): the
//! blocking API on plain threads, the async API on tokio (current-thread and multi-thread),
//! async-std and smol.

use crate::common::MongoHarness;

leader_testkit::contract_tests!(every_runtime, MongoHarness::from_env());
