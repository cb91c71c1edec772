#![cfg_attr(docsrs, feature(doc_cfg))]
//! The backend contract suite of the `leader` toolkit.
//! Its API is exempt from semver: use it as a dev-dependency, at an exact version (`=`).
//!
//! Every backend must keep the guarantees listed under `# Contract` on
//! [`LockBackend`](leader_core::LockBackend). The checks in [`checks`] verify them one by
//! one; each takes a [`Harness`] (how to make the backend and move its time) and a
//! [`Runner`] (how to drive futures: plain threads, tokio, async-std or smol), and uses a
//! fresh random lock name. [`contract_tests!`] expands them into one named `#[test]` each.
//!
//! The checks are written once, against [`AsyncLockBackend`](leader_core::AsyncLockBackend);
//! a blocking backend runs them through [`Blocking`], which calls its blocking methods.
//!
//! ```
//! use leader_testkit::{MemoryHarness, ThreadRunner};
//!
//! // In a test file: one #[test] per check, on the blocking API, then on the async API.
//! leader_testkit::contract_tests!(memory, blocking, Some(MemoryHarness::new()), ThreadRunner);
//! leader_testkit::contract_tests!(memory_async, async, Some(MemoryHarness::new()), ThreadRunner);
//! # fn main() {}
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod checks;
mod harness;
mod macros;
mod runner;
mod wait;

pub use harness::{Blocking, BlockingAsAsync, Harness, MemoryHarness, fresh_name};
#[cfg(feature = "async-std")]
pub use runner::AsyncStdRunner;
#[cfg(feature = "smol")]
pub use runner::SmolRunner;
#[cfg(feature = "tokio")]
pub use runner::TokioRunner;
pub use runner::{Runner, ThreadRunner};
pub use wait::{eventually, sleep, until_next_boundary, wait_until, within};
