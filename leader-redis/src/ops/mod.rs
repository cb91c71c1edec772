//! The operations as data: each builds its script invocation and decodes the reply with
//! plain functions, so the blocking and async paths run the very same code around one I/O
//! call. One file per operation: [`acquire`], [`extend`], [`release`], [`state`].

mod acquire;
mod extend;
mod release;
mod state;

pub(crate) use acquire::Acquire;
pub(crate) use extend::Extend;
pub(crate) use release::Release;
pub(crate) use state::{State, holder_state};

use leader_core::LockName;
use redis::{ScriptInvocation, Value};

use crate::decode::int;
use crate::error::OpError;
use crate::keys::LockKeys;

/// One backend operation.
pub(crate) trait Op {
    /// What the caller gets.
    type Output;
    /// The operation's name, for traces and errors.
    const NAME: &'static str;
    /// The lock it is about.
    fn name(&self) -> &LockName;
    /// The EVALSHA invocation.
    fn invocation(&self, keys: &LockKeys, channel: &str) -> ScriptInvocation<'static>;
    /// Reads the script's reply.
    fn decode(&self, reply: Value) -> Result<Self::Output, OpError>;
    /// A short word for traces.
    fn outcome(output: &Self::Output) -> &'static str;
}

pub(crate) fn flag(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

pub(crate) fn status(items: &[Value]) -> Option<i64> {
    items.first().and_then(int)
}
