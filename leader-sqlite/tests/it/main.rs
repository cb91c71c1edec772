//! The integration tests of `leader-sqlite`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-sqlite --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;

mod clock;
mod contract;
mod errors;
mod open_race;
mod paths;
mod processes;
mod renewals;
mod schema;
mod shared;
mod timeout;
