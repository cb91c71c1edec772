//! The one test binary of leader-sim: seeds pass, runs replay exactly, planted defects are
//! caught, failures shrink, the runs the simulator once failed pass, and small campaigns
//! pass exhaustively.
//! `cargo test -p leader-sim --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod defects;
mod explore;
mod found;
mod ranked;
mod schedule;
mod seeds;
mod tenants;
