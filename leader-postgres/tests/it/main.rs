//! The integration tests of `leader-postgres`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-postgres --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;

mod batches;
mod contract;
mod errors;
mod faults;
mod notify;
mod operator;
mod shared;
mod standby;
mod stuck;
