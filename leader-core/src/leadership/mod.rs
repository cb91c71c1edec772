//! What an elector hands the application about its leadership: the
//! [`LeaderRunResult`](result::LeaderRunResult) of a run, the
//! [`LeaseContext`](crate::LeaseContext) an action runs under, and the leadership events
//! ([`LeadershipEvents`](events::LeadershipEvents) stream,
//! [`LeadershipWatcher`](watcher::LeadershipWatcher)).
//!
//! Public API. It may import `spi`, `telemetry` and the cross-cutting modules, and nothing
//! from `engine`, `config` or `embedded`.

pub(crate) mod context;
pub(crate) mod event;
pub(crate) mod events;
pub(crate) mod result;
