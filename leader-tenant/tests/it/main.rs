//! The integration tests of `leader-tenant`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-tenant --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;

mod contract;
#[cfg(feature = "smol")]
mod late_lease;
mod poller_async;
mod poller_blocking;
mod poller_etcd;
mod poller_redis;
mod scope;
