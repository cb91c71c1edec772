#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod blocking;
mod config;
mod context;
mod error;
mod firing;
mod job;
mod plan;
mod record;
mod schedule;
mod telemetry;

#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
mod nonblocking;

pub use blocking::Scheduler;
pub use config::{Delivery, JobConfig, MissedTicks, OnShutdown};
pub use context::JobContext;
pub use error::ScheduleError;
pub use leader_core::Shutdown;
#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
pub use nonblocking::AsyncScheduler;
pub use plan::RunKind;
pub use record::{RunRecord, RunState, read_run_record};
pub use schedule::{MAX_PERIOD, MIN_PERIOD, Schedule};

/// The scheduler's I/O-free decisions, for the project's simulator (`leader-sim`), which
/// drives them against a model store as the shells do.
///
/// **Not public API.** Hidden from the docs and exempt from semver: anything here may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::firing::{Firing, FiringReport, Seen, Step, running_at_fire};
    pub use crate::job::{MAX_SLEEP, job_elector, run_state, wait_time_until};
    pub use crate::plan::{PlannedRun, after_firing, next_firing, startup_tick};
}
