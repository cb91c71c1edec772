//! The integration tests of `leader-async`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-async --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod continuous;
mod contract;
mod edges;
mod elector;
mod groups;
mod late_lease;
mod ranked;
mod read_write;
mod reentrant;
mod renewals;
#[cfg(feature = "tokio")]
mod shutdown;
mod telemetry;
