//! The operations as data: each builds its script call ([`ScriptCall`]) and decodes the reply with
//! plain functions, so the blocking and async paths run the very same code around one I/O
//! call. One file per operation: [`acquire`], [`extend`], [`release`], [`state`], [`record`],
//! [`shared`] (the read/write lock's four calls);
//! [`acked`]
//! builds the round trip of a script and its replica acknowledgement (`WAIT`), reads it,
//! and decides what an acknowledgement that fell short makes of an answer.

mod acked;
mod acquire;
mod call;
mod extend;
mod items;
mod record;
mod release;
mod shared;
mod state;

pub(crate) use acked::{
    AckedReply, Unacknowledged, Undo, acked_pipeline, acknowledged, pair, script_unknown, split,
};
pub(crate) use acquire::Acquire;
pub(crate) use call::{ScriptCall, write_arg};
pub(crate) use extend::Extend;
pub(crate) use items::Items;
pub(crate) use record::{ReadRecord, WriteRecord, record_error};
pub(crate) use release::Release;
pub(crate) use shared::{AcquireShared, ExtendShared, ReleaseShared, StateShared};
pub(crate) use state::{State, holder_state};

use leader_core::{Lease, LockName, ReleaseRequest};
use redis::Value;

use crate::decode::int;
use crate::error::OpError;
use crate::keys::LockKeys;

/// One backend operation.
pub(crate) trait Op {
    /// What the caller gets.
    type Output;
    /// The operation's name, for errors.
    const NAME: &'static str;
    /// The lock it is about.
    fn name(&self) -> &LockName;
    /// The EVALSHA invocation.
    fn invocation(&self, keys: LockKeys<'_>, channel: &str) -> ScriptCall;
    /// Reads the script's reply.
    fn decode(&self, reply: Value) -> Result<Self::Output, OpError>;
    /// `true` when the operation writes a grant that replica acknowledgement waits for
    /// (acquire and extend).
    const ACKED: bool = false;
    /// What `output` becomes when the replicas did not acknowledge it: each answer that
    /// wrote a grant becomes `failure()`, and each lease so granted is returned, to be
    /// released. Operations that are not [`ACKED`](Self::ACKED) keep their output.
    fn unacknowledged(
        output: Self::Output,
        _failure: &dyn Fn() -> OpError,
    ) -> (Self::Output, Vec<Lease>) {
        (output, Vec::new())
    }
    /// `true` when the leases [`unacknowledged`](Self::unacknowledged) hands back are
    /// released (an acquire's grants): its errors say so.
    const RELEASES: bool = false;
    /// The release of the grants [`unacknowledged`](Self::unacknowledged) handed back
    /// (`requests`, in its order): an exclusive lease's by default.
    fn undo<'r>(
        &self,
        requests: &'r [ReleaseRequest<'r>],
        key_prefix: &'r str,
    ) -> Option<Undo<'r>> {
        Release::new(requests, key_prefix).map(Undo::Exclusive)
    }
}

pub(crate) fn flag(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

pub(crate) fn status(items: &[Value]) -> Option<i64> {
    items.first().and_then(int)
}
