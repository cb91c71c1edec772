#![cfg_attr(docsrs, feature(doc_cfg))]
//! Core of the `leader` toolkit: the shared value types, the one error type, the backend
//! SPI, and the in-memory and no-op backends.
//!
//! Electors live in `leader-blocking` and `leader-async`; the other backends in
//! `leader-sqlite` (one file per host) and, for servers, `leader-redis`,
//! `leader-postgres` and `leader-mongodb`. This crate depends on no async runtime.
//!
//! Inside, the crate is layered: `spi` (the backend traits and their values), `config`
//! (what a user sets), `embedded` (the in-memory and no-op backends), `leadership` (what
//! an elector hands the application), `telemetry`, and the `engine`, which makes every
//! decision the electors act on without doing any I/O (the blocking and async electors
//! only call the backend, wait, and feed the answers back). The engine is not public API.
//! The repository's `ARCHITECTURE.md` draws the whole picture.
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
//! A held lease found lost is logged at `warn` with its `lock`: a message beginning
//! `lease lost:` (a renewal found it gone, failed, or came too late) or `the action
//! returned after its lease was lost` (with `fencing_token`, inside the run's `leader.run`
//! span, before it closes); a campaign's lost term, as
//! `leadership revoked` with its `node`. `leader-history`'s `TraceLayer` reads these spans
//! and messages to write a trace its checker judges: change them together.
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

// The layers, lowest first (each folder's `mod.rs` says what it holds and may import):
// - `name`, `tenant`, `error`, `redact`: cross-cutting. `name` and `redact` import
//   nothing; `tenant` imports `name`; `error` imports `name`, `tenant` and `spi::state`
//   (a leaf: the holder an error names).
// - `spi` (backend traits and values) imports `error` and `name`.
// - `config` (public settings) imports `error`.
// - `embedded` (memory, noop, clock), `leadership` (what an application is handed) and
//   `telemetry` (spans, metrics) import `spi` and the cross-cutting modules.
// - `engine` (`__private`) imports all of the above; only this file imports it.
mod config;
mod embedded;
mod engine;
mod error;
pub mod kit;
mod leadership;
mod name;
mod redact;
mod spi;
mod telemetry;
mod tenant;

#[cfg(feature = "metrics")]
pub use telemetry::metrics;

pub use config::campaign::{CampaignConfig, DeploymentMode};
pub use config::lease_mode::LeaseMode;
pub use config::options::LeaderElectionOptions;
pub use embedded::clock::{Clock, ManualClock, SystemClock};
pub use embedded::memory::InMemoryBackend;
pub use embedded::noop::NoopBackend;
pub use engine::watcher::LeadershipWatcher;
pub use error::{BackendError, BackendErrorKind, BoxError, Error, OptionsError};
pub use leadership::change::{ChangeKind, LeaderChange};
pub use leadership::context::LeaseContext;
pub use leadership::event::{EventCallback, LeadershipEvent, RevokeReason};
pub use leadership::events::LeadershipEvents;
pub use leadership::hold::{Hold, Reentered};
pub use leadership::result::LeaderRunResult;
pub use leadership::shutdown::Shutdown;
pub use name::{LockName, NameError};
pub use redact::{RedactedError, UrlSecrets};
pub use spi::backend::{AsyncLockBackend, Backend, LockBackend};
pub use spi::cursor::CursorError;
pub use spi::group::{GroupKeys, GroupSlots, GroupState};
pub use spi::lease::{Lease, OwnerToken, ParseOwnerTokenError};
pub use spi::lease_limit::{LeaseTooLong, MAX_SERVER_LEASE};
pub use spi::listing::{ForceReleaseOutcome, ListCursor, ListPage, ListRequest};
pub use spi::outcome::{AcquireOutcome, ExtendOutcome, ReleaseOutcome, SlotOutcome};
pub use spi::record::{
    MAX_RECORD_LEN, RecordWrite, RecordWriteOutcome, StoredRecord, corrupt_record,
};
pub use spi::release_events::{ReleaseEvents, ReleaseListener, ReleaseNotice};
pub use spi::request::{AcquireRequest, ReleaseRequest, Renewal, SlotRequest, SlotWalk};
pub use spi::shared::{
    AsyncSharedLockBackend, MaxReaders, Role, SharedLockBackend, SharedOutcome, SharedRequest,
    SharedState, WriterIntent,
};
pub use spi::state::{LeaderLease, LeaderState, LockStatus};
pub use tenant::{IntoTenantId, TENANT_PREFIX, TenantId, TenantIdError};

/// The machinery the electors of `leader-blocking` and `leader-async` share.
///
/// **Not public API.** It is `pub` only so those sibling crates can use it; it is hidden
/// from the docs and exempt from semver: anything here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::config::root_certificate::RootCertificate;
    pub use crate::engine::*;
}
