//! The embedded backends and their clock: [`InMemoryBackend`](crate::InMemoryBackend) (a
//! complete backend inside one process, for tests and single-process deployments),
//! [`NoopBackend`](crate::NoopBackend) (grants every lock), and the
//! [`Clock`](crate::Clock) the in-memory backend reads.
//!
//! Public API. Imports `spi` and the cross-cutting `error` and `name`; nothing from
//! `config`, `engine`, `leadership` or `telemetry`.

pub(crate) mod clock;
pub(crate) mod memory;
pub(crate) mod noop;
