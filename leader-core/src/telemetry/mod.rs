//! Spans and metrics, in one place for the blocking and the async electors. The spans are
//! listed in the crate docs (`# Tracing`), the metrics in [`crate::metrics`] (feature
//! `metrics`). The probes take plain values (keys, leases, outcomes); the engine maps its
//! own answers onto them (`AcquireProbe::finish` is written beside `Step`).
//!
//! Imports: `spi`, `error`, `name`, `tenant`; nothing from `engine`, `config`, `embedded`
//! or `leadership`.

#[cfg(feature = "metrics")]
pub mod metrics;
mod probe;
mod record;

pub use probe::AcquireProbe;
pub(crate) use probe::{HoldProbe, record_extend, record_lease_lost};
pub(crate) use record::AcquireEnd;
