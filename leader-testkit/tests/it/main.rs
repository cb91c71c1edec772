//! The integration tests of `leader-testkit`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-testkit --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod etcd;
mod fixtures;
mod memory;
#[cfg(feature = "tokio")]
mod proxy;
