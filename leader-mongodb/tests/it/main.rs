//! The integration tests of `leader-mongodb`, one binary: one module per area. The
//! server shared through `leader_rig::fixtures::shared_mongo` starts once for the whole
//! binary (each module keeps to collections of its own); a test that stops or restarts a
//! server starts one of its own. `cargo test -p leader-mongodb --all-features --test it --
//! <module>::` runs one module.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod clock_skew;
mod connect;
mod contract;
mod faults;
mod fencing;
mod layout;
mod notify;
mod operator;
mod partition;
mod resource_fence;
mod shared;
