//! The contract suite on `InMemoryBackend` through the async trait, under every runtime.

use leader_testkit::MemoryHarness;

leader_testkit::contract_tests!(every_async_runtime, Some(MemoryHarness::new()));
