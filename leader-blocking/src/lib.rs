#![cfg_attr(docsrs, feature(doc_cfg))]
//! Blocking leader electors for the `leader` toolkit.
//!
//! Most applications add the facade crate `leader` instead: it re-exports these types and
//! picks the backend by URL.
//!
//! - [`LeaderElector`] runs the action on the calling thread, only if this node wins the
//!   lock; the others skip.
//! - [`ThreadPoolLeaderElector`] runs it on a fixed pool of worker threads and hands back a
//!   [`TaskHandle`] that can be waited on or `.await`ed.
//! - [`LeaderGroupElector`] lets up to N nodes lead a name at once, each in a slot.
//!
//! Both take any [`LockBackend`](leader_core::LockBackend), one
//! [`LeaderElectionOptions`] and give back the shared
//! [`LeaderRunResult`].
//!
//! # Examples
//!
//! ```
//! use leader_blocking::LeaderElector;
//! use leader_core::{InMemoryBackend, LeaderElectionOptions};
//!
//! let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
//! match elector.run_if_leader("nightly-report", || 40 + 2)? {
//!     Some(answer) => assert_eq!(answer, 42),
//!     None => unreachable!("nobody else competes here"),
//! }
//! # Ok::<(), leader_core::Error>(())
//! ```

mod acquire;
mod batch;
mod campaign;
mod elector;
mod group;
mod guard;
mod held;
mod orphan;
mod pool;
mod renew;
mod renewals;
mod survey;
mod task;

pub use batch::{Acquired, Finished};
pub use campaign::LeadershipHandle;
pub use elector::LeaderElector;
pub use group::LeaderGroupElector;
pub use guard::LockGuard;
pub use leader_core::{Error, LeaderElectionOptions, LeaderRunResult, LeaseContext};
pub use pool::ThreadPoolLeaderElector;
pub use task::TaskHandle;
