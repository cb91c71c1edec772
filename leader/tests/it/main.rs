//! The integration tests of `leader`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;

mod connect;
mod groups;
mod handoff;
mod nesting;
mod observe;
mod operator;
mod orphans;
mod ranked;
mod resource_fence;
mod secrets;
mod sql_fencing;
