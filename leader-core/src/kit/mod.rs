//! The backend kit: the way to write a backend.
//!
//! A backend says, once per store call, what to send (the call **planned as data**, with
//! no I/O: [`Store`]) and how to send a call of its own and wait for the answer, blocking
//! and async ([`Runs`]: a **runner**). This crate then provides
//! [`LockBackend`](crate::LockBackend) and [`AsyncLockBackend`](crate::AsyncLockBackend)
//! for it, and does once what every backend would otherwise write again for each call:
//!
//! - **error naming**: a call's [`Failure`] becomes an [`Error::Backend`](crate::Error)
//!   naming the backend and the lock;
//! - **tracing**: one `debug` event per call (backend, lock, call, outcome, time taken),
//!   the clock read only when the event is recorded;
//! - **local wake-ups**: waiters in this process wake as soon as a release or a force
//!   release freed a lock, without waiting for the store's notification to come back
//!   ([`Store::local_waiters`]);
//! - **batches**: a batch the store cannot send in one call, or that it declines (it
//!   names a lock twice, say), goes as single calls; a batch call that fails as a whole is
//!   each of its locks' failure, named by each; an answer missing is an error;
//! - **groups**: a group's slots are walked one acquire at a time unless the store takes
//!   them all in one call ([`Store::plan_slot`]).
//!
//! A third-party backend uses the same kit and the same contract suite (`leader-testkit`'s
//! `contract_tests!`) as the backends of this workspace.
//!
//! # Writing a backend
//!
//! 1. The calls: the kit's owned ones ([`calls`]: acquire, extend, release, and always
//!    the operator's and the records'), or a type of your own for a call that needs more,
//!    holding what it sends and implementing [`Call`] (its answer type and its name; the
//!    kit knows the lock from the request). [`Store`] plans the lease's calls and the
//!    batches from their requests ([`calls::each`] for a batch of the kit's calls);
//!    nothing is sent there.
//! 2. A runner: `impl Runs<C> for YourBackend` for each call type (or once, generically,
//!    over a trait your call types share) with the blocking and the async way of sending
//!    it. A backend whose driver needs tokio runs its calls on a `leader-runtime`
//!    background runtime: `block_on` for the blocking side, `run` for the async one.
//! 3. The calls a store cannot make in one go (batches, a group's slots) are
//!    [`Unsupported`]; the kit then makes the single calls.
//!
//! # Examples
//!
//! A store of one counter per lock name, as a sketch of the shape (a real backend keeps
//! leases, owners and expiry: see the crate's `InMemoryBackend`):
//!
//! ```
//! use std::future::{Future, ready};
//! use leader_core::kit::{Call, Failure, Runs};
//! use leader_core::{Backend, LockName};
//!
//! /// Reads a lock's counter.
//! struct Read {
//!     key: LockName,
//! }
//!
//! impl Call for Read {
//!     type Output = u64;
//!     const NAME: &'static str = "read";
//! }
//!
//! struct Counters;
//!
//! impl Backend for Counters {
//!     fn name(&self) -> &'static str {
//!         "counters"
//!     }
//! }
//!
//! impl Runs<Read> for Counters {
//!     fn run_blocking(&self, call: Read) -> Result<u64, Failure> {
//!         Ok(call.key.as_str().len() as u64)
//!     }
//!     fn run_async(&self, call: Read) -> impl Future<Output = Result<u64, Failure>> + Send {
//!         ready(self.run_blocking(call))
//!     }
//! }
//!
//! let read = Read { key: LockName::new("job")? };
//! assert_eq!(Counters.run_blocking(read)?, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! May import: `spi`, `error`, `name`, `telemetry`.

mod answers;
mod blocking;
mod call;
pub mod calls;
mod nonblocking;
mod runs;
mod shared_record;
mod shared_store;
mod store;

pub use call::{Call, Failure};
pub use runs::Runs;
pub use shared_record::{Deadline, Intent, SharedAnswer, SharedAsk, SharedHolder, SharedRecord};
pub use shared_store::SharedStore;
pub use store::{Released, Store, Unsupported};
