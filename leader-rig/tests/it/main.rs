//! The integration tests of `leader-rig`, one binary with one module per area: the
//! fixtures start, stop and never outlive the process; the fault proxy does what it says.
//! `cargo test -p leader-rig --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod etcd;
mod fixtures;
#[cfg(feature = "tokio")]
mod proxy;
