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
//! # Orphaned acquisitions
//!
//! An acquire that fails after it was sent (a response timeout, a dropped connection)
//! may still have taken the lock, or may take it later: a request stuck in a paused
//! server's socket runs when the server goes on, and its lease starts then. The elector
//! releases that attempt's owner token in the background, which can only ever free the
//! attempt's own lease: at once, then with backoff (at most 500 ms apart) until a release
//! frees it, for as long as the store answers none of them (up to five minutes from the
//! send, or the lease if longer), and for one lease after the store first answers one.
//! A lock taken by a request that lands when a frozen server thaws is so free again soon
//! after the thaw: within one backoff step, plus the backend's timeout should a release
//! be stuck in the server as it went on. A request that lands after a longer outage
//! holds its lock until its lease runs out, as a crashed holder's would: the bound keeps
//! a process from retrying without end against a store that is gone.
//!
//! One timer thread of the process keeps the orphans of every elector until each release
//! is due, and hands it to threads of its backend value (one while releases are answered
//! promptly, another whenever one has waited 50 ms, at most 8): one backend's hanging
//! releases delay no other backend's, and on one backend a hanging release delays the
//! others by at most 50 ms while fewer than eight hang. At most 10,000 orphans wait at once; the ones beyond are
//! left to run out.
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
mod observe;
mod orphan;
mod per_backend;
mod pool;
mod read_write;
mod reentrant;
mod renew;
mod renewals;
mod survey;
mod task;
mod workers;

pub use batch::{Acquired, Finished};
pub use campaign::LeadershipHandle;
pub use elector::LeaderElector;
pub use group::LeaderGroupElector;
pub use guard::LockGuard;
pub use leader_core::{Error, LeaderElectionOptions, LeaderRunResult, LeaseContext};
pub use observe::Observer;
pub use pool::ThreadPoolLeaderElector;
pub use read_write::{ReadGuard, ReadWriteLocks, WriteGuard};
pub use reentrant::{ReentrantGuard, ReentrantLocks};
pub use task::TaskHandle;
