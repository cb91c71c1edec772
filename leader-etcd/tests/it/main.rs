//! The integration tests of `leader-etcd`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-etcd --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;

mod clock_skew;
mod cluster_faults;
mod contract;
mod errors;
mod faults;
mod fencing;
mod leases;
mod notify;
mod shared;
mod tls;
