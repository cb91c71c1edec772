//! Public configuration: [`LeaderElectionOptions`](crate::LeaderElectionOptions), the lock
//! guard's [`LeaseMode`](crate::LeaseMode), the campaign's
//! [`CampaignConfig`](crate::CampaignConfig) and [`DeploymentMode`](crate::DeploymentMode),
//! and their serde support (feature `serde`).
//!
//! Public API. Imports only the cross-cutting `error`; nothing from `spi`, `engine`,
//! `embedded`, `leadership` or `telemetry` (the engine reads the settings, never the
//! other way round: `LeaseMode::apply`, which builds the engine's `Keepalive`, is written
//! in `engine/keepalive.rs`).

pub(crate) mod campaign;
#[cfg(feature = "serde")]
mod config_serde;
pub(crate) mod lease_mode;
pub(crate) mod options;
pub(crate) mod root_certificate;
