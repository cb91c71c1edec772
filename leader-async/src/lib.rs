#![cfg_attr(docsrs, feature(doc_cfg))]
//! The async leader elector of the `leader` toolkit, on tokio, async-std or smol.
//!
//! Most applications add the facade crate `leader` instead: it re-exports these types and
//! picks the backend by URL.
//!
//! [`AsyncLeaderElector`] has exactly the semantics of the blocking elector (both are shells
//! over one engine in `leader-core`, which makes every decision):
//! the same [`LeaderElectionOptions`], the same [`LeaderRunResult`], over any
//! [`AsyncLockBackend`](leader_core::AsyncLockBackend). Waiting and backoff are async
//! sleeps; no executor thread is ever blocked.
//!
//! | feature | runtime |
//! |---|---|
//! | `tokio` (default) | tokio: sleeps and spawns use the current tokio runtime |
//! | `smol` | smol: async-io timers, smol's global executor |
//! | `async-std` | async-std (discontinued upstream, RUSTSEC-2025-0052; prefer `smol`) |
//!
//! Several features may be on at once; the runtime is picked at run time (a current tokio
//! runtime wins, otherwise async-io's timers). With none on, the crate does not compile.
//!
//! # Cancel safety
//!
//! Dropping a `run_if_leader` future while it holds the lease (a timeout, a `select!`
//! that lost, a shutdown) stops the renewals and releases the lease at once through a
//! task spawned on the runtime; the lock does not stay taken until the lease runs out.
//! Dropping it while the acquire request is still on its way releases that request's
//! owner token in the background (the server may apply the request anyway), as does an
//! acquire that fails after it was sent. A release whose task a shutting-down tokio
//! runtime drops is finished on a thread of its own. A cancelled call is not an
//! `ActionFailed`: it simply has no outcome.
//!
//! # Orphaned acquisitions
//!
//! An acquire that fails after it was sent (a response timeout, a dropped connection), or
//! whose future is dropped while it is on its way, may still have taken the lock, or may take it later: a request stuck in a paused
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
//! Each orphan is released by a task of its own (on a thread of its own should the
//! runtime shut down first), so one backend's hanging releases delay no other's; at most
//! 10,000 are released at once, and the ones beyond are left to run out.
//!
//! # Examples
//!
//! ```
//! use leader_async::AsyncLeaderElector;
//! use leader_core::{InMemoryBackend, LeaderElectionOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), leader_core::Error> {
//! let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
//! let value = elector.run_if_leader("rebalance", || async { 40 + 2 }).await?;
//! assert_eq!(value, Some(42));
//! # Ok(())
//! # }
//! ```

#[cfg(not(any(feature = "tokio", feature = "async-std", feature = "smol")))]
compile_error!(
    "leader-async needs a runtime: enable one of the features `tokio`, `smol` or `async-std`"
);

mod acquire;
mod batch;
mod campaign;
mod elector;
mod group;
mod guard;
mod held;
mod observe;
mod on_drop;
mod orphan;
mod pause;
mod read_write;
mod reentrant;
mod release;
mod rt;
mod stop;
mod survey;

pub use batch::{AsyncAcquired, AsyncFinished};
pub use campaign::AsyncLeadershipHandle;
pub use elector::AsyncLeaderElector;
pub use group::AsyncLeaderGroupElector;
pub use guard::AsyncLockGuard;
pub use leader_core::{Error, LeaderElectionOptions, LeaderRunResult, LeaseContext};
pub use observe::AsyncObserver;
pub use pause::sleep_or_shutdown;
pub use read_write::{AsyncReadGuard, AsyncReadWriteLocks, AsyncWriteGuard};
pub use reentrant::{AsyncReentrantGuard, AsyncReentrantLocks};
