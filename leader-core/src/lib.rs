//! Core of the `leader` toolkit: the shared value types, the one error type, the backend
//! SPI, and the in-memory and no-op backends.
//!
//! Electors live in `leader-blocking` and `leader-async`; backends for servers in
//! `leader-redis` and `leader-mongodb`. This crate depends on no async runtime.
//!
//! | item | what it is |
//! |---|---|
//! | [`LeaderElectionOptions`] | wait / lease / node id / min lease / auto-extend / db time |
//! | [`LeaderRunResult`] | `Elected`, `Skipped`, `ActionFailed`: the outcome of every elector |
//! | [`LeaderState`] | a best-effort snapshot of who leads a lock |
//! | [`LockName`] | a validated lock name |
//! | [`Lease`], [`OwnerToken`] | what an acquisition holds |
//! | [`LockBackend`], [`AsyncLockBackend`] | the backend SPI, with its `# Contract` |
//! | [`InMemoryBackend`], [`NoopBackend`] | the embedded backends |
//! | [`Error`] | the one error enum |
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use leader_core::{LeaderElectionOptions, LockName};
//!
//! let options = LeaderElectionOptions::default().with_lease_time(Duration::from_secs(10));
//! options.validate()?;
//! let name = LockName::new("nightly-report")?;
//! # let _ = name;
//! # Ok::<(), leader_core::Error>(())
//! ```

mod attempts;
mod backend;
mod campaign;
mod clock;
mod context;
mod error;
mod events;
mod keepalive;
mod leadership;
mod lease;
mod lease_mode;
mod memory;
mod name;
mod noop;
mod options;
mod orphan;
mod result;
mod retry;
#[cfg(feature = "serde")]
mod serde_support;
mod settings;
mod state;
mod token_source;

pub use async_channel;
pub use attempts::{Attempts, Step};
pub use backend::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Backend, ExtendOutcome, LockBackend,
    ReleaseOutcome,
};
pub use campaign::{CampaignConfig, CampaignRun, DeploymentMode};
pub use clock::{Clock, ManualClock, SystemClock};
pub use context::{LeaseContext, LeaseTracker};
pub use error::{BackendError, BackendErrorKind, BoxError, Error, NameError, OptionsError};
pub use events::{ReleaseEvents, ReleaseListener};
pub use keepalive::Keepalive;
pub use leadership::{EventCallback, LeadershipEvent, LeadershipState, RevokeReason};
pub use lease::{Lease, OwnerToken, ParseOwnerTokenError};
pub use lease_mode::LeaseMode;
pub use memory::InMemoryBackend;
pub use name::LockName;
pub use noop::NoopBackend;
pub use options::LeaderElectionOptions;
pub use orphan::Orphan;
pub use result::LeaderRunResult;
pub use retry::Backoff;
pub use settings::ElectorSettings;
pub use state::{LeaderLease, LeaderState, LockStatus};
