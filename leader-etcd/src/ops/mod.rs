//! The calls as [`Op`]s: the arguments they own, the etcd requests each sends, and the
//! reading of the answers. Nothing here knows about threads or runtimes: the blocking and
//! the async paths both run these on the backend's runtime.
//!
//! Every call that changes a lock is one etcd transaction (after a lease grant where a
//! new expiry is needed), built in [`txn`] and read back through [`answer`]. The records
//! beside the locks (the scheduler's compare-and-set register) are in [`records`].

mod acquire;
mod answer;
mod extend;
mod records;
mod release;
mod slot;
mod state;
pub(crate) mod txn;

use std::future::Future;

pub(crate) use acquire::Acquire;
pub(crate) use answer::Answer;
pub(crate) use extend::Extend;
pub(crate) use records::{ReadRecord, WriteRecord};
pub(crate) use release::{Release, Released};
pub(crate) use slot::{AcquireSlot, slot_fits_one_txn};
pub(crate) use state::{State, lapsed};

use crate::conn::Conn;
use crate::error::OpError;

/// One call: what it needs, owned (it runs on the backend's runtime; cloned when it is
/// sent again), and how it runs.
pub(crate) trait Op: Clone + Send + 'static {
    /// What the call gives.
    type Output: Send + 'static;
    /// Its name in traces.
    const NAME: &'static str;
    /// The lock it is about (for a listing, the prefix): named in traces and errors.
    fn key(&self) -> &str;
    /// Runs it with `conn`.
    fn run(self, conn: Conn) -> impl Future<Output = Result<Self::Output, OpError>> + Send;
    /// A short label of `output` for traces.
    fn outcome(output: &Self::Output) -> &'static str;
}
