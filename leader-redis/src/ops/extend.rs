//! `extend` and `extend_batch` as one script call per chunk.

use std::time::SystemTime;

use leader_core::{ExtendOutcome, LockName, Renewal};
use redis::Value;

use super::{Items, Op, ScriptCall, flag};
use crate::decode::{array, int, micros_since_epoch, millis, text_field, time_field};
use crate::error::OpError;
use crate::keys::LockKeys;
use crate::scripts::EXTEND;

/// `extend` and `extend_batch`: one script renews every lease of a chunk, each answered on
/// its own (see `lua/extend.lua`).
#[derive(Debug)]
pub(crate) struct Extend<'a, 'p> {
    /// The renewals; errors of the whole call name the first one's key.
    renewals: Items<'a, Renewal<'a>>,
    /// The backend's key prefix, for the keys of the leases after the first.
    key_prefix: &'p str,
    now: SystemTime,
}

impl<'a, 'p> Extend<'a, 'p> {
    /// The most leases one script renews: a chunk keeps the server busy for about a
    /// millisecond, and 10,000 leases take 10 round trips.
    pub(crate) const CHUNK: usize = 1000;
    /// The most chunks sent in one round trip (a pipeline, on a standalone server).
    pub(crate) const PIPELINED: usize = 10;

    /// Renews `renewals` (at most [`CHUNK`](Self::CHUNK) of them); `None` when there are
    /// none, since an empty call would name no lock.
    pub(crate) fn new(
        renewals: &'a [Renewal<'a>],
        key_prefix: &'p str,
        now: SystemTime,
    ) -> Option<Self> {
        Some(Extend {
            renewals: Items::chunk(renewals)?,
            key_prefix,
            now,
        })
    }

    /// Renews the one lease of `renewal`.
    pub(crate) fn one(renewal: Renewal<'a>, key_prefix: &'p str, now: SystemTime) -> Self {
        Extend {
            renewals: Items::One(renewal),
            key_prefix,
            now,
        }
    }
}

impl Op for Extend<'_, '_> {
    /// One answer per lease; a lease's own failure names its key.
    type Output = Vec<Result<ExtendOutcome, OpError>>;
    const NAME: &'static str = "extend";

    fn name(&self) -> &LockName {
        &self.renewals.first().lease.key
    }

    fn invocation(&self, keys: LockKeys<'_>, _channel: &str) -> ScriptCall {
        let mut invocation = ScriptCall::new(&EXTEND, self.renewals.len());
        invocation.key(keys.lock());
        for renewal in self.renewals.iter().skip(1) {
            invocation.key(LockKeys::new(self.key_prefix, &renewal.lease.key).lock());
        }
        invocation.arg(micros_since_epoch(self.now));
        for renewal in self.renewals.iter() {
            invocation
                .arg(renewal.lease.owner.hex().as_slice())
                .arg(millis(renewal.lease_time))
                .arg(flag(renewal.use_db_time));
        }
        invocation
    }

    fn decode(&self, reply: Value) -> Result<Self::Output, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        if items.len() != self.renewals.len() {
            return Err(bad());
        }
        Ok(items.iter().map(extended).collect())
    }

    const ACKED: bool = true;

    /// Every renewal becomes `failure()` (the lease stays until it runs out; nothing to
    /// release); a lease found gone stays gone.
    fn unacknowledged(
        output: Self::Output,
        failure: &dyn Fn() -> OpError,
    ) -> (Self::Output, Vec<leader_core::Lease>) {
        let answers = output
            .into_iter()
            .map(|answer| match answer {
                Ok(ExtendOutcome::Extended { .. }) => Err(failure()),
                other => other,
            })
            .collect();
        (answers, Vec::new())
    }
}

/// One lease's answer in an `extend` reply.
fn extended(item: &Value) -> Result<ExtendOutcome, OpError> {
    match item {
        Value::Int(0) => Ok(ExtendOutcome::NotHeld),
        Value::Array(failed) if failed.first().and_then(int) == Some(-1) => {
            Err(OpError::InScript {
                op: Extend::NAME,
                message: text_field(failed.get(1), "error")?,
            })
        }
        expires => Ok(ExtendOutcome::Extended {
            expires_at: time_field(Some(expires), "exp")?,
        }),
    }
}
