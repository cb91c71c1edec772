//! The one test binary of leader-history (feature `tracing`): the electors' traces, written
//! by `TraceLayer`, read back and checked.
//! `cargo test -p leader-history --all-features --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod layer;
