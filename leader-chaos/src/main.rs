//! `leader-chaos`: see the crate README.

fn main() {}
