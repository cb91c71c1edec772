//! The one test binary of leader-sim: seeds pass, runs replay exactly, planted defects are
//! caught, failures shrink, and the runs the simulator once failed pass.
//! `cargo test -p leader-sim --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod defects;
mod found;
mod seeds;
