//! Async leader elector for the `leader` toolkit (in progress; see the README's status table).
pub use leader_core::*;
