//! The calls as [`Op`]s: the arguments they own, the etcd requests each sends, and the
//! reading of the answers. Nothing here knows about threads or runtimes: the kit's runner
//! (`calls`) sends these on the backend's runtime, blocking or async.
//!
//! Every call that changes a lock is one etcd transaction (after a lease grant where a
//! new expiry is needed), built in [`txn`] and read back through [`answer`]. Read/write locks are in [`shared`]: one
//! transaction each on the lock's whole record (after a lease grant for an acquire or an
//! extend), each hold live on an etcd lease of its own. The records
//! beside the locks (the scheduler's compare-and-set register) are in [`records`].

mod acquire;
mod answer;
mod extend;
mod records;
mod release;
mod shared;
mod slot;
mod state;
pub(crate) mod txn;

use std::future::Future;

use leader_core::kit::Call;

pub(crate) use answer::Answer;
pub(crate) use shared::{AcquireShared, ExtendShared, ReleaseShared, StateShared};
pub(crate) use slot::{AcquireSlot, slot_fits_one_txn};
pub(crate) use state::lapsed;

use crate::conn::Conn;
use crate::error::OpError;

/// One call of the backend kit ([`Call`]: its answer and name), owned (it runs on
/// the backend's runtime; cloned when it is sent again), and how it runs.
pub(crate) trait Op: Call + Clone + 'static {
    /// Runs it with `conn`.
    fn run(self, conn: Conn) -> impl Future<Output = Result<Self::Output, OpError>> + Send;
}

/// An op that can be one of a batch: the lock it is about, whose ops run one after another.
pub(crate) trait BatchOp: Op {
    /// The lock's key.
    fn lock(&self) -> &str;
}

impl BatchOp for leader_core::kit::calls::Acquire {
    fn lock(&self) -> &str {
        self.key.as_str()
    }
}

impl BatchOp for leader_core::kit::calls::Release {
    fn lock(&self) -> &str {
        self.lease.key.as_str()
    }
}
