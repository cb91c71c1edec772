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
