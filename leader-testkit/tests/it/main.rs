//! The integration tests of `leader-testkit`, one binary with one module per area.
//! `cargo test -p leader-testkit --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod memory;
