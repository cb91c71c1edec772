//! Criterion benchmarks; see `memory.rs` and the README for how to run them.
