#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod error;
mod job;
mod poller;
mod report;
mod source;

pub use error::TenantError;
pub use job::{AsyncTenantJob, TenantJob};
pub use leader_core::Shutdown;
pub use leader_core::{IntoTenantId, TENANT_PREFIX, TenantId, TenantIdError};
pub use poller::blocking::BlockingTenantPoller;
pub use poller::config::{PollerConfig, ShutdownMode};
#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
pub use poller::nonblocking::AsyncTenantPoller;
pub use report::{CycleReport, JobFailure, OutcomeKind, TenantOutcome, TenantReport};
pub use source::{FallibleSource, TenantSource};
