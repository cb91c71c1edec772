//! The integration tests of `leader-blocking`, one binary with one module per area: it builds
//! and links once, and what its modules share (servers, fixtures) starts once.
//! `cargo test -p leader-blocking --all-features --test it -- <module>::` runs one module.
//! `edges.rs`, `metrics.rs`, `renewals.rs` stay binaries of their own: they count
//! what the whole process holds (threads, a global recorder).
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod batch;
mod campaign;
mod corrupted_slot;
mod elector;
mod groups;
mod guard;
mod late_lease;
mod pool;
mod ranked;
mod read_write;
mod reentrant;
mod telemetry;
