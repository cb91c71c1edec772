//! The backend SPI: the [`LockBackend`](crate::LockBackend) and
//! [`AsyncLockBackend`](crate::AsyncLockBackend) traits and the values that cross them
//! (requests, outcomes, leases and owner tokens, listing pages and cursors, group keys,
//! release events, lock state, the lease limit a backend enforces, records), and where
//! their randomness comes from (owner tokens, a group's first slot, and the thread's
//! seeded override a simulator sets).
//!
//! Public API, the lowest layer: it imports only the cross-cutting `error` and `name`,
//! and nothing from `config`, `engine`, `embedded`, `leadership` or `telemetry` (only
//! `randomness`'s tests drive the engine's `Backoff`, to check its jitter is seeded).

pub(crate) mod backend;
pub(crate) mod cursor;
pub(crate) mod group;
pub(crate) mod lease;
pub(crate) mod lease_limit;
pub(crate) mod listing;
pub(crate) mod outcome;
pub(crate) mod randomness;
pub(crate) mod record;
pub(crate) mod release_events;
pub(crate) mod request;
pub(crate) mod shared;
pub(crate) mod state;
pub(crate) mod token_source;
