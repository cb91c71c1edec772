//! The embedded backends and their clocks: [`InMemoryBackend`](memory::InMemoryBackend)
//! (a complete backend in one process, for tests and single-process deployments),
//! [`NoopBackend`](noop::NoopBackend) (always grants), and the [`Clock`](clock::Clock)
//! the in-memory backend reads.
//!
//! Public API. It may import `spi` and the cross-cutting modules, and nothing from
//! `config`, `engine`, `leadership` or `telemetry`.

pub(crate) mod clock;
pub(crate) mod memory;
pub(crate) mod noop;
