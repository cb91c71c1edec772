//! A deterministic simulation of the engine of the `leader` toolkit (see the README).
//!
//! [`run`] plays one [`Plan`]: simulated nodes drive the real engine machines of
//! `leader-core` (`Attempts`, `LeaseTracker`, `RenewalSchedule`, `Keepalive`, `Orphan`)
//! against a [`store::ModelStore`] with a backend's semantics, on one thread, under clocks,
//! pauses, crashes, message faults and data loss the plan's seed decides; the history it
//! records is judged by `leader-history`. The same plan always plays the same run.
//! [`explore`] plays small campaigns exhaustively instead: every choice of the network
//! (each message on time, delayed, held back or lost; a leader paused before it renews)
//! within a fault budget, through the [`choices::Choices`] seam.

pub mod choices;
mod clock;
pub mod explore;
mod node;
pub mod plan;
mod shrink;
pub mod store;
mod world;

pub use leader_core::__private::Defect;
pub use plan::{Fault, FaultKind, Network, Plan, Planted, Profile, Scheduled};
pub use shrink::shrink;
pub use world::{ABANDONED_WITHIN_US, Outcome, RANKED_SETTLE_HEARTBEATS, run, run_with};
