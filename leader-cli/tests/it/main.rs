//! The integration tests of `leader-cli`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-cli --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;

mod backends;
mod clock_skew;
mod release_race;
mod schedule;
mod secrets;
mod stored_times;
mod usage;
