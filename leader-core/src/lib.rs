#![cfg_attr(docsrs, feature(doc_cfg))]
//! Core of the `leader` toolkit: the shared value types, the one error type, the backend
//! SPI, and the in-memory and no-op backends.
//!
//! Electors live in `leader-blocking` and `leader-async`; backends for servers in
//! `leader-redis` and `leader-mongodb`. This crate depends on no async runtime.
//!
//! Most applications add the facade crate `leader` instead: it re-exports these types and
//! picks the backend by URL.
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
//! # Tracing
//!
//! The electors open these `tracing` spans (no secret in any field: the owner token is
//! never recorded), so every log line an action writes carries its lock and token:
//!
//! | span | level | fields |
//! |---|---|---|
//! | `leader.acquire` | DEBUG | `lock`, `backend`, `node_id`; at the end `outcome` (`acquired` / `skipped` / `failed`) and `fencing_token` |
//! | `leader.run` | INFO | `lock`, `backend`, `node_id`, `fencing_token`: the action of `run_if_leader*` runs inside it |
//! | `leader.term` | INFO | the same, around a campaign's term (its renewals and release) |
//! | `leader.extend` | DEBUG | the same, and `outcome` (`extended` / `not_held` / `error`) |
//! | `leader.release` | DEBUG | the same, and `outcome` (`released` / `not_held` / `error`) |
//!
//! With the `metrics` feature, the electors also report counters, histograms and a gauge
//! to the [`metrics`](https://docs.rs/metrics) facade: see the `metrics` module.
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

mod acquire_batch;
mod attempts;
mod backend;
mod batch_answers;
mod campaign;
mod candidacy;
mod clock;
mod context;
mod cursor;
mod error;
mod events;
mod group;
mod keepalive;
mod late;
mod leadership;
mod leadership_events;
mod lease;
mod lease_limit;
mod lease_mode;
mod listing;
#[path = "engine/machine_batch.rs"]
mod machine_batch;
#[path = "engine/machine_campaign.rs"]
mod machine_campaign;
#[path = "engine/machine_scope.rs"]
mod machine_scope;
mod memory;
#[cfg(feature = "metrics")]
pub mod metrics;
mod name;
mod noop;
mod options;
mod orphan;
mod redact;
mod renewal_schedule;
mod result;
mod retry;
#[cfg(feature = "serde")]
mod serde_support;
mod settings;
mod state;
mod telemetry;
mod tenant;
mod token_source;
mod watcher;

pub use backend::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Backend, ExtendOutcome, LockBackend,
    ReleaseOutcome, ReleaseRequest, Renewal, SlotOutcome, SlotRequest, SlotWalk,
};
pub use campaign::{CampaignConfig, DeploymentMode};
pub use clock::{Clock, ManualClock, SystemClock};
pub use context::LeaseContext;
pub use cursor::CursorError;
pub use error::{BackendError, BackendErrorKind, BoxError, Error, NameError, OptionsError};
pub use events::{ReleaseEvents, ReleaseListener};
pub use group::{GroupKeys, GroupSlots, GroupState};
pub use leadership::{EventCallback, LeadershipEvent, RevokeReason};
pub use leadership_events::LeadershipEvents;
pub use lease::{Lease, OwnerToken, ParseOwnerTokenError};
pub use lease_limit::{LeaseTooLong, MAX_SERVER_LEASE};
pub use lease_mode::LeaseMode;
pub use listing::{ForceReleaseOutcome, ListCursor, ListPage, ListRequest};
pub use memory::InMemoryBackend;
pub use name::LockName;
pub use noop::NoopBackend;
pub use options::LeaderElectionOptions;
pub use redact::{RedactedError, UrlSecrets};
pub use result::LeaderRunResult;
pub use state::{LeaderLease, LeaderState, LockStatus};
pub use tenant::{IntoTenantId, TENANT_PREFIX, TenantId, TenantIdError};
pub use watcher::LeadershipWatcher;

/// The machinery the electors of `leader-blocking` and `leader-async` share: the engine.
///
/// Its decisions are free of I/O: [`Scope`](__private::Scope) names and scopes locks,
/// [`Attempts`](__private::Attempts) says what an acquire loop does next,
/// [`CampaignStep`](__private::CampaignStep) and [`TermLoop`](__private::TermLoop) what a
/// campaign's standby and leader do next, [`TenantBatch`](__private::TenantBatch) what a
/// tenant batch's answers come to. The electors are shells over it: they do the I/O each
/// step asks for and feed the answer back, and differ only in how they wait.
///
/// **Not public API.** It is `pub` only so those sibling crates can use it; it is hidden
/// from the docs and exempt from semver: anything here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::acquire_batch::{AcquireBatch, BatchAnswer, TenantKeys};
    pub use crate::attempts::{Attempts, LateLease, Step};
    pub use crate::backend::OwnedAcquire;
    pub use crate::batch_answers::{answers_in_order, by_backend, unanswered};
    pub use crate::campaign::{AfterAttempt, CampaignRun};
    pub use crate::candidacy::{Candidacy, Standing, Survey, TermCheck, Withdrawal};
    pub use crate::context::LeaseTracker;
    pub use crate::group::random_slot;
    pub use crate::keepalive::Keepalive;
    pub use crate::late::is_late;
    pub use crate::leadership::LeadershipState;
    pub use crate::machine_batch::{TenantBatch, Won};
    pub use crate::machine_campaign::{CampaignStep, Raced, TermLoop, TermStep};
    pub use crate::machine_scope::Scope;
    pub use crate::orphan::Orphan;
    pub use crate::redact::{unparsed_url, url_scheme};
    pub use crate::renewal_schedule::RenewalSchedule;
    pub use crate::retry::Backoff;
    pub use crate::settings::ElectorSettings;
    pub use crate::telemetry::AcquireProbe;
}
