//! The integration tests of `leader-schedule`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-schedule --all-features --test it -- <module>::` runs one module.
//! `threads.rs` stay binaries of their own: they count
//! what the whole process holds (threads, a global recorder).
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;

mod edges;
mod firing;
mod fleet;
mod processes;
