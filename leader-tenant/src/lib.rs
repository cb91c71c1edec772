#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod error;
mod job;
mod poller;
mod report;
mod scope;
mod shutdown;
mod source;
mod tenant_id;

pub use error::TenantError;
pub use job::{AsyncTenantJob, TenantJob};
#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
pub use poller::r#async::AsyncTenantPoller;
pub use poller::blocking::BlockingTenantPoller;
pub use poller::config::{PollerConfig, ShutdownMode};
pub use report::{CycleReport, JobFailure, OutcomeKind, TenantOutcome, TenantReport};
pub use scope::ForTenant;
pub use shutdown::Shutdown;
pub use source::{FallibleSource, TenantSource};
pub use tenant_id::{IntoTenantId, TENANT_PREFIX, TenantId};
