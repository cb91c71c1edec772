//! The values an elector hands the application about its leadership: the
//! [`LeaderRunResult`](crate::LeaderRunResult) of a run, the
//! [`LeaseContext`](crate::LeaseContext) an action runs under, the
//! [`LeadershipEvent`](crate::LeadershipEvent)s of a campaign (with their
//! [`RevokeReason`](crate::RevokeReason)) and the
//! [`LeadershipEvents`](crate::LeadershipEvents) stream that carries them, and the
//! [`Shutdown`](crate::Shutdown) signal that stops pollers and schedulers, and the
//! [`LeaderChange`](crate::LeaderChange)s an observer of a lock reports.
//!
//! Public API. Imports `spi` and the cross-cutting `error`; nothing from `config`,
//! `engine`, `embedded` or `telemetry` (the engine fills these values in).

pub(crate) mod change;
pub(crate) mod context;
pub(crate) mod event;
pub(crate) mod events;
pub(crate) mod hold;
pub(crate) mod result;
pub(crate) mod shutdown;
