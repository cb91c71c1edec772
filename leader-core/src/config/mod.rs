//! Public configuration: [`LeaderElectionOptions`](options::LeaderElectionOptions), the
//! guard's [`LeaseMode`](lease_mode::LeaseMode), the campaign's
//! [`CampaignConfig`](crate::CampaignConfig), and their serde support (feature `serde`).
//!
//! Everything here is public API. It may import the cross-cutting modules (`error`,
//! `name`, `tenant`) and `spi`, and nothing from `engine`, `embedded`, `leadership` or
//! `telemetry`.

pub(crate) mod campaign;
pub(crate) mod lease_mode;
pub(crate) mod options;
#[cfg(feature = "serde")]
mod serde_support;
