//! The integration tests of `leader-redis`, one binary: one module per area. The servers
//! shared through `leader_rig::fixtures::shared_*` (a standalone Redis, a Redis
//! Cluster, a TLS server) and `common::RedisHarness::sentinel` start once for the whole
//! binary; a test that kills, pauses, restarts or counts the commands of a server starts
//! one of its own. `cargo test -p leader-redis --all-features --test it -- <module>::`
//! runs one module.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod batches;
mod cluster_failover;
mod contract_cluster;
mod contract_standalone;
mod derived_index;
mod edges;
mod faults;
mod fencing;
mod from_client;
mod groups;
mod leadership;
mod operator;
mod pubsub;
mod ranked_busy;
mod renewals;
mod replica_acks;
mod resource_fence;
mod runtimes;
mod sentinel;
mod sentinel_contract;
mod shared;
mod signals;
#[cfg(feature = "tls")]
mod tls;
